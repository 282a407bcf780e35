package web

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// What a commit changed, in one line, for the timeline: whose memory (the
// scopes of the files its diff touched, as the viewer may see it) and
// what, from the diff rather than the subject ("dream: 1 change from
// history 2-2" says neither): the first line it added and the first it
// removed, by their text without the line's metadata, so a line Dream only
// stamped anew (a new date or source) counts as neither.

// quoteMax bounds a line quoted in a summary, in characters.
const quoteMax = 70

// changeOf is what the timeline shows of one commit's diff.
type changeOf struct {
	Scopes  []scopeLink
	Summary string
}

func (s *Server) summarize(nm *namer, d gitstore.Diff) changeOf {
	var out changeOf
	var seen []audience.Scope
	for _, f := range d.Files {
		if sc, ok := audience.ScopeOfPath(f.Path); ok && !slices.Contains(seen, sc) {
			seen = append(seen, sc)
			out.Scopes = append(out.Scopes, scopeLink{Name: scopeName(sc), Label: s.scopeLabel(nm, sc), URL: scopeURL(sc)})
		}
	}
	added, removed := changedLines(d.Unified)
	var parts []string
	if s := quoted("added", added); s != "" {
		parts = append(parts, s)
	}
	if s := quoted("removed", removed); s != "" {
		parts = append(parts, s)
	}
	switch {
	case len(parts) > 0:
		out.Summary = strings.Join(parts, "; ")
	case len(d.Files) > 0:
		out.Summary = "restamped lines (dates or sources) in " + filesOf(d)
	}
	return out
}

// changedLines are the texts of the lines the diff added and removed,
// memory lines (facts) first, without their metadata; a text both added
// and removed (a line stamped anew, or moved) is in neither.
func changedLines(unified string) (added, removed []string) {
	var addedFacts, removedFacts []string
	for line := range strings.Lines(unified) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---") || line == "" {
			continue
		}
		text, fact := lineText(line[1:])
		if text == "" {
			continue
		}
		switch {
		case line[0] == '+' && fact:
			addedFacts = append(addedFacts, text)
		case line[0] == '+':
			added = append(added, text)
		case line[0] == '-' && fact:
			removedFacts = append(removedFacts, text)
		case line[0] == '-':
			removed = append(removed, text)
		}
	}
	added, removed = append(addedFacts, added...), append(removedFacts, removed...)
	for i := 0; i < len(added); i++ {
		if j := slices.Index(removed, added[i]); j >= 0 {
			removed = slices.Delete(removed, j, j+1)
			added = slices.Delete(added, i, i+1)
			i--
		}
	}
	return added, removed
}

// lineText is a file line as a reader sees it: a memory line's text
// without its comment (fact), a heading without its marks.
func lineText(raw string) (text string, fact bool) {
	if l, ok := memline.Parse(raw); ok {
		return strings.TrimSpace(l.Text), true
	}
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(raw), "#")), false
}

// quoted is `verb “first”` and how many more, "" for none.
func quoted(verb string, texts []string) string {
	if len(texts) == 0 {
		return ""
	}
	q := texts[0]
	if utf8.RuneCountInString(q) > quoteMax {
		q = string([]rune(q)[:quoteMax-1]) + "…"
	}
	s := verb + " “" + q + "”"
	if n := len(texts) - 1; n > 0 {
		s += fmt.Sprintf(" and %s", count(n, "more line", "more lines"))
	}
	return s
}

func filesOf(d gitstore.Diff) string {
	names := make([]string, 0, len(d.Files))
	for _, f := range d.Files {
		names = append(names, path.Base(f.Path))
	}
	return strings.Join(names, ", ")
}
