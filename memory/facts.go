package memory

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// A scope's facts by id, across its tiers. A line another replaced
// (superseded-by) is no longer current wherever it stands: whoever shows
// it — recall, /why, the memory page — shows it as superseded, with the
// line that stands for it now, found here by id (never by its words).

// Fact is one line of a scope's memory and where it stands.
type Fact struct {
	File string // a hot file, or Cold
	N    int    // its line number in File, from 1
	Line memline.Line
}

// Facts are a scope's facts that carry an id.
type Facts struct {
	byID map[string]Fact
}

// FactsOf indexes files (by name: hot files and Cold). Where two lines
// carry one id, the hot one counts, then the first.
func FactsOf(files map[string]*memline.File) *Facts {
	x := &Facts{byID: map[string]Fact{}}
	for _, rel := range TierFiles() {
		f := files[rel]
		if f == nil {
			continue
		}
		for _, i := range f.Facts() {
			l := f.Items[i].Line
			if _, ok := x.byID[l.ID]; l.ID != "" && !ok {
				x.byID[l.ID] = Fact{File: rel, N: i + 1, Line: l}
			}
		}
	}
	return x
}

// Facts reads scope s's tiers and indexes their facts; a file LeftOut is
// left out, as if it were not there.
func (m *Memory) Facts(s audience.Scope) (*Facts, error) {
	files := map[string]*memline.File{}
	var errs []error
	for _, rel := range TierFiles() {
		data, err := m.Shown(s, rel)
		if errors.Is(err, fs.ErrNotExist) || LeftOut(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rel, err))
			continue
		}
		files[rel] = memline.ParseFile(data)
	}
	return FactsOf(files), errors.Join(errs...)
}

// Get is the fact with id.
func (x *Facts) Get(id string) (Fact, bool) {
	f, ok := x.byID[id]
	return f, ok
}

// Has reports whether a fact carries id (for memline.NewID).
func (x *Facts) Has(id string) bool {
	_, ok := x.byID[id]
	return ok
}

// Now is what stands for l today: the line that replaced it, and the one
// that replaced that, to the one still current. ok is false when l is
// current itself, or when its replacement is no longer in memory (the
// pointer is then all there is to say).
func (x *Facts) Now(l memline.Line) (Fact, bool) {
	var now Fact
	found := false
	seen := map[string]bool{l.ID: true}
	for id := l.SupersededBy; id != "" && !seen[id]; {
		seen[id] = true
		f, ok := x.byID[id]
		if !ok {
			break
		}
		now, found = f, true
		id = f.Line.SupersededBy
	}
	return now, found
}

// Why says in words why a cold line left hot memory and when ("" for a
// line that does not say: written before lines did, or by hand).
func Why(l memline.Line) string {
	var why string
	switch l.Why {
	case memline.Aged:
		why = "aged out (ephemeral)"
	case memline.Budget:
		why = "moved out to keep memory within its budget (still true then)"
	case memline.Moved:
		why = "moved out by the deep Dream to make room (still true then)"
	case memline.Retired:
		why = "retired by the deep Dream as no longer true or useful"
	case memline.Merged:
		why = "merged into another line"
	case memline.Replaced:
		why = "replaced by a correction"
	default:
		return ""
	}
	if l.Out == "" {
		return why
	}
	return "left hot memory " + l.Out + ": " + why
}

// SupersededNote says that l is no longer current and what stands for it
// now (x: the scope's facts); "" for a current line.
func SupersededNote(l memline.Line, x *Facts) string {
	if !l.Superseded() {
		return ""
	}
	if now, ok := x.Now(l); ok {
		return "superseded, no longer current; now: “" + now.Line.Text + "”"
	}
	return "superseded, no longer current (what replaced it is no longer in memory)"
}
