package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// Provenance: every memory line Dream writes names the history entries it
// came from (memline's "src:" cursors). /why, and `dreamgate why` at the
// terminal, find the remembered lines holding some words — in the memory
// files and the cold memory of the scopes the asker may read — and show
// each with its priority, the date it was last confirmed and its sources:
// when each was archived and from which conversation. A source of a scope
// the asker may not read is counted, never shown.

// Provenance reads the history entries memory lines name
// (*history.Store).
type Provenance interface {
	// Entries returns the entries with those cursors still in the
	// archive, in file order.
	Entries(cursors ...int) ([]history.Entry, error)
}

// WhyMatch is a remembered line that holds every word asked about.
type WhyMatch struct {
	Scope audience.Scope
	// File is the line's file within its scope's folder: a hot file or
	// memory.Cold.
	File string
	Line memline.Line
	// Sources are the line's history entries in the archive, of scopes
	// the asker may read, oldest first. Hidden counts those of other
	// scopes; Gone those no longer in the archive (compacted).
	Sources      []history.Entry
	Hidden, Gone int
	// Superseded, for a line a later one replaced, says so and what
	// stands for it now (memory.SupersededNote); "" for a current line.
	Superseded string
}

// FindWhy returns the lines of the memory files and cold memory of scopes
// (memory.TierFiles, read through mem) that hold every word of query as a
// whole word (letters and digits, any case: "Ana" is not in "Banana"), at
// most limit of them (hot memory first, in file order), with their sources
// read through hist (nil: none are looked up) and, for a line a later one
// replaced, what stands for it now; and how many lines matched in all. A
// file still as the template made it is not searched: its lines are
// examples, not memories; nor is a file memory leaves out (memory.LeftOut:
// a symbolic link), while the scope's other files are.
func FindWhy(mem *memory.Memory, scopes []audience.Scope, query string, limit int, hist Provenance) ([]WhyMatch, int, error) {
	words := whyWords(query)
	if len(words) == 0 {
		return nil, 0, nil
	}
	var out []WhyMatch
	total := 0
	for _, s := range scopes {
		files := map[string]*memline.File{}
		for _, rel := range memory.TierFiles() {
			data, err := mem.Shown(s, rel)
			if errors.Is(err, fs.ErrNotExist) || memory.LeftOut(err) {
				continue // a link is left out, and the log told of it
			}
			if err != nil {
				return nil, 0, fmt.Errorf("read %s: %w", path.Join(s.Dir(), rel), err)
			}
			if rel != memory.Cold && memory.SameAsTemplate(rel, data) {
				continue
			}
			files[rel] = memline.ParseFile(data)
		}
		facts := memory.FactsOf(files)
		for _, rel := range memory.TierFiles() {
			if files[rel] == nil {
				continue
			}
			for _, it := range files[rel].Items {
				if !it.Fact || !holdsAll(it.Line.Text, words) {
					continue
				}
				total++
				if len(out) < limit {
					out = append(out, WhyMatch{Scope: s, File: rel, Line: it.Line, Superseded: memory.SupersededNote(it.Line, facts)})
				}
			}
		}
	}
	if hist == nil {
		return out, total, nil
	}
	if err := addSources(out, scopes, hist); err != nil {
		return out, total, err
	}
	return out, total, nil
}

// addSources looks up the sources of ms in one read of the archive.
func addSources(ms []WhyMatch, readable []audience.Scope, hist Provenance) error {
	var cursors []int
	for _, m := range ms {
		cursors = append(cursors, m.Line.Sources...)
	}
	if len(cursors) == 0 {
		return nil
	}
	entries, err := hist.Entries(cursors...)
	if err != nil {
		return fmt.Errorf("read the sources of memory lines: %w", err)
	}
	byCursor := make(map[int]history.Entry, len(entries))
	for _, e := range entries {
		byCursor[e.Cursor] = e
	}
	for i := range ms {
		m := &ms[i]
		for _, c := range m.Line.Sources {
			e, ok := byCursor[c]
			switch {
			case !ok:
				m.Gone++
			case !slices.Contains(readable, e.Scope):
				m.Hidden++
			default:
				m.Sources = append(m.Sources, e)
			}
		}
	}
	return nil
}

// whyWords are query's words, lower case: runs of letters and digits.
func whyWords(query string) []string {
	return strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// holdsAll reports whether text holds every one of words as a word of its
// own (whyWords' words: a word inside another is not it).
func holdsAll(text string, words []string) bool {
	has := map[string]bool{}
	for _, w := range whyWords(text) {
		has[w] = true
	}
	for _, w := range words {
		if !has[w] {
			return false
		}
	}
	return true
}

// WhyText is the answer to /why query (and `dreamgate why`): each match
// with its priority, its date and its sources; where names a match's file
// and scope for the reader.
func WhyText(query string, ms []WhyMatch, total int, where func(WhyMatch) string) string {
	q := strings.Join(whyWords(query), " ")
	if total == 0 {
		return fmt.Sprintf("No remembered line holds %q.", q)
	}
	var b strings.Builder
	if total == 1 {
		fmt.Fprintf(&b, "1 remembered line holds %q:", q)
	} else {
		fmt.Fprintf(&b, "%d remembered lines hold %q", total, q)
		if len(ms) < total {
			fmt.Fprintf(&b, " (the first %d)", len(ms))
		}
		b.WriteString(":")
	}
	for _, m := range ms {
		fmt.Fprintf(&b, "\n\n- %s", m.Line.Text)
		if m.Superseded != "" {
			b.WriteString("\n  " + m.Superseded)
		}
		fmt.Fprintf(&b, "\n  %s, %s — %s", m.Line.Effective(), confirmed(m.Line), where(m))
		if why := memory.Why(m.Line); why != "" && m.File == memory.Cold {
			b.WriteString("\n  " + why)
		}
		if len(m.Line.Sources) == 0 {
			b.WriteString("\n  No recorded source: written by hand, or before Dream recorded where lines come from.")
			continue
		}
		for _, e := range m.Sources {
			conv := e.SessionKey
			if conv == "" {
				conv = "a conversation of unknown name"
			}
			fmt.Fprintf(&b, "\n  from %s, archived %s", conv, e.Timestamp)
		}
		if m.Hidden > 0 {
			fmt.Fprintf(&b, "\n  and %d from conversations not shown here", m.Hidden)
		}
		if m.Gone > 0 {
			fmt.Fprintf(&b, "\n  and %d no longer in the archive (compacted)", m.Gone)
		}
	}
	return b.String()
}

func confirmed(l memline.Line) string {
	if l.Date == "" {
		return "undated"
	}
	return "last confirmed " + l.Date
}

// whyFileName is how a match's file reads: its name, or "cold memory".
func whyFileName(m WhyMatch) string {
	if m.File == memory.Cold {
		return "cold memory (" + m.File + ")"
	}
	return m.File
}
