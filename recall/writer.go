package recall

import (
	"context"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/store"
)

// writer is an update's side of the engine's store.RecallWriter: it counts
// the documents added since the last commit, so that each transaction
// holds at most batchDocs of them with the marks that go with them, and
// names the marks.
type writer struct {
	w   store.RecallWriter
	ctx context.Context
	n   int
}

// The marks an update keeps (store.RecallWriter.SetMark): the memory
// setting the index was built under, whether a first update completed,
// the last archive cursor read; and, one per name, how far each
// conversation generation was read (conv), the stamp each message file
// (file) and each scope's cold memory (cold) was last read under, and the
// messages each archive entry was made from (range: the generation, the
// first message; the messages' end and the entry's scope), which those
// messages are searched in. markSep never occurs in a name's parts.
const (
	markMemory   = "memory"
	markComplete = "complete"
	markHistory  = "history_cursor"
	markSep      = "\x1f"
	markConv     = "conv" + markSep
	markFile     = "file" + markSep
	markCold     = "cold" + markSep
	markRange    = "range" + markSep
)

// mark reads one mark, as written so far ("" when none).
func (w *writer) mark(name string) (string, error) {
	m, err := w.w.Marks(name)
	return m[name], err
}

// marks reads the marks under prefix, by the rest of their names.
func (w *writer) marks(prefix string) (map[string]string, error) {
	m, err := w.w.Marks(prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.TrimPrefix(k, prefix)] = v
	}
	return out, nil
}

func (w *writer) setMark(name, value string) error { return w.w.SetMark(name, value) }

// add indexes d in scope s.
func (w *writer) add(s audience.Scope, d store.RecallDoc) error {
	if len(d.Text) > store.RecallMaxText {
		d.Text = cutBytes(d.Text, store.RecallMaxText)
	}
	if err := w.w.Add(s, d); err != nil {
		return err
	}
	w.n++
	return nil
}

func (w *writer) full() bool { return w.n >= batchDocs }

// flush commits what was written so far.
func (w *writer) flush() error {
	w.n = 0
	return w.w.Commit()
}

// lineDate returns the first date (YYYY-MM-DD) a cold-memory line
// carries: the date it was last confirmed, as the memory files write it.
func lineDate(line string) (time.Time, bool) {
	for i := 0; i+10 <= len(line); i++ {
		if line[i+4] != '-' || line[i+7] != '-' || i > 0 && isDigit(line[i-1]) || i+10 < len(line) && isDigit(line[i+10]) {
			continue
		}
		if t, err := time.ParseInLocation("2006-01-02", line[i:i+10], time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// coldText is a cold-memory line as a search shows it: a fact without its
// comment, saying when and why it left hot memory and, when a later line
// replaced it, that it is no longer current and what is (facts: the
// scope's; nil knows none); any other line as written.
func coldText(line string, facts *memory.Facts) string {
	l, ok := memline.Parse(line)
	if !ok || !l.HasComment() {
		return line
	}
	text := "- " + l.Text
	if facts == nil {
		facts = memory.FactsOf(nil)
	}
	if note := memory.SupersededNote(l, facts); note != "" {
		text += " (" + note + ")"
	}
	if why := memory.Why(l); why != "" {
		text += " [" + why + "]"
	}
	return text
}

// addCold indexes each non-blank line of a cold-memory file, dated by the
// date it carries or else by the file's modification time: a fact as
// coldText writes it (facts: the scope's, to say what replaced it).
func (w *writer) addCold(s audience.Scope, text string, mod time.Time, facts *memory.Facts) (int, error) {
	n := 0
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		at := mod.Unix()
		if t, ok := lineDate(line); ok {
			at = t.Unix()
		}
		if err := w.add(s, store.RecallDoc{Kind: store.RecallCold, At: at, Pos: i + 1, Text: coldText(line, facts)}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
