package dream

import (
	"path"
	"slices"

	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// Ids and corrections. Every fact of a scope, hot or cold, carries a
// stable id (memline), given by Dream when it first stamps the scope's
// lines and kept wherever the line moves. A correction names the id of
// the line it replaces: phase 1 writes it in the finding ([replaces:7f3a]),
// phase 2 in the comment of the line it writes (replaces:7f3a), the deep
// Dream with REPLACE or MERGE. The program then marks the replaced line
// superseded by the new one (superseded-by:), wherever it stands: a line
// still in a memory file leaves it for cold memory (why:replaced); a line
// the edit removed goes there as it was; a line already in cold memory is
// marked where it is. The id decides, never the words: two lines that
// read alike are not taken for one another.

// idSet is the ids a scope's memory holds, so that a new one is unique.
type idSet map[string]bool

func (s idSet) has(id string) bool { return s[id] }

// addFiles records the ids of the files' facts.
func (s idSet) addFiles(files ...*memline.File) {
	for _, f := range files {
		if f == nil {
			continue
		}
		for _, i := range f.Facts() {
			if id := f.Items[i].Line.ID; id != "" {
				s[id] = true
			}
		}
	}
}

// idGiver gives facts that have none an id unique in the scope (taken
// holds the scope's); an id an earlier fact of the same pass holds is
// given anew, so no two lines share one.
type idGiver struct {
	taken, seen idSet
}

func newIDGiver(taken idSet) *idGiver { return &idGiver{taken: taken, seen: idSet{}} }

// file gives ids to f's facts that want (nil: all) selects; a hot file's
// facts also lose the cold words (out:, why:) a copy from cold memory
// brought. It reports whether it changed f.
func (g *idGiver) file(f *memline.File, hot bool, want func(memline.Item) bool) bool {
	if f == nil {
		return false
	}
	changed := false
	for _, i := range f.Facts() {
		it := &f.Items[i]
		l := it.Line
		if want != nil && !want(*it) {
			if l.ID != "" {
				g.seen[l.ID] = true
			}
			continue
		}
		if l.ID == "" || g.seen[l.ID] {
			l.ID = memline.NewID(l.Seed(), g.taken.has)
			g.taken[l.ID] = true
		}
		g.seen[l.ID] = true
		if hot {
			l.Out, l.Why = "", ""
		}
		if !sameLine(it.Line, l) {
			before := it.Raw
			it.SetLine(l)
			changed = changed || it.Raw != before
		}
	}
	return changed
}

// lines gives ids to lines leaving hot memory that have none.
func (g *idGiver) lines(ls []memline.Line) {
	for i := range ls {
		if ls[i].ID == "" {
			ls[i].ID = memline.NewID(ls[i].Seed(), g.taken.has)
			g.taken[ls[i].ID] = true
		}
	}
}

func sameLine(a, b memline.Line) bool {
	return a.ID == b.ID && a.Out == b.Out && a.Why == b.Why
}

// located is where a fact stands among the files of a change.
type located struct {
	f    *memline.File
	item int
	rel  string
	hot  int // the index of its hot file, -1 in cold memory
}

// supersede marks what the current lines of hot and cold (their facts
// that name others in replaces:) replaced: each replaced line still in a
// hot file leaves it for cold memory, marked (the returned sections); a
// line of gone (removed by this change's edits, by id) goes to cold memory
// as it was; a cold line is marked in place; a line of named (shown to
// phase 1 with an id its file does not hold) is found as its file holds
// it, else as it was. A line already superseded stays as it is (the
// first replacement holds). It reports whether it changed each hot file
// and the cold file.
func supersede(hot []*editedFile, cold *memline.File, gone map[string]goneLine, named map[string]namedLine) (sections []coldSection, hotChanged []bool, coldChanged bool) {
	m := &marking{hot: hot, cold: cold, gone: gone, named: named,
		hotChanged: make([]bool, len(hot)), out: map[string][]memline.Line{}, drop: map[*memline.File]map[int]bool{}}
	m.index()
	for _, p := range m.pairs() {
		m.mark(p.old, p.by)
	}
	for f, idx := range m.drop {
		kept := f.Items[:0:0]
		for i, it := range f.Items {
			if !idx[i] {
				kept = append(kept, it)
			}
		}
		f.Items = kept
	}
	for _, rel := range m.order {
		sections = append(sections, coldSection{from: rel, why: memline.Replaced, lines: m.out[rel]})
	}
	return sections, m.hotChanged, m.coldChanged
}

// marking is one supersede pass.
type marking struct {
	hot   []*editedFile
	cold  *memline.File
	gone  map[string]goneLine
	named map[string]namedLine
	where map[string]located // the facts with an id, hot first

	hotChanged  []bool
	coldChanged bool
	out         map[string][]memline.Line // leaving for cold memory, by the hot file they leave
	order       []string
	drop        map[*memline.File]map[int]bool
}

// index finds where each id stands, hot files first.
func (m *marking) index() {
	m.where = map[string]located{}
	add := func(f *memline.File, rel string, hot int) {
		for _, i := range f.Facts() {
			if id := f.Items[i].Line.ID; id != "" {
				if _, ok := m.where[id]; !ok {
					m.where[id] = located{f: f, item: i, rel: rel, hot: hot}
				}
			}
		}
	}
	for fi, f := range m.hot {
		add(f.after, f.rel, fi)
	}
	add(m.cold, "", -1)
}

// replacement is a line (old) a current line (by) names as replaced.
type replacement struct{ old, by string }

// pairs lists what the current lines name, in a fixed order.
func (m *marking) pairs() []replacement {
	var out []replacement
	for _, loc := range m.where {
		l := loc.f.Items[loc.item].Line
		if l.Superseded() {
			continue
		}
		for _, old := range l.Replaces {
			if old != l.ID {
				out = append(out, replacement{old, l.ID})
			}
		}
	}
	slices.SortFunc(out, func(a, b replacement) int {
		if a.old != b.old {
			return compareStrings(a.old, b.old)
		}
		return compareStrings(a.by, b.by)
	})
	return slices.Compact(out)
}

// take sends l, leaving the hot file rel, to cold memory.
func (m *marking) take(rel string, l memline.Line) {
	if m.out[rel] == nil {
		m.order = append(m.order, rel)
	}
	m.out[rel] = append(m.out[rel], l)
}

// remove takes item of the hot file fi out of it.
func (m *marking) remove(fi, item int) {
	f := m.hot[fi].after
	if m.drop[f] == nil {
		m.drop[f] = map[int]bool{}
	}
	m.drop[f][item] = true
	m.hotChanged[fi] = true
}

// mark supersedes the line old by the line by, wherever it stands.
func (m *marking) mark(old, by string) {
	loc, ok := m.where[old]
	switch {
	case ok && loc.hot >= 0:
		l := loc.f.Items[loc.item].Line
		if l.Superseded() || m.drop[loc.f][loc.item] {
			return
		}
		l.SupersededBy = by
		m.take(loc.rel, l)
		m.remove(loc.hot, loc.item)
	case ok:
		it := &loc.f.Items[loc.item]
		if it.Line.Superseded() {
			return
		}
		l := it.Line
		l.SupersededBy = by
		it.SetLine(l)
		m.coldChanged = true
	default:
		if nl, ok := m.named[old]; ok {
			delete(m.named, old)
			l := nl.line
			l.SupersededBy = by
			if nl.rel == memory.Cold {
				// A cold line gets its id as it is marked, where it is.
				for _, i := range m.cold.Facts() {
					if it := &m.cold.Items[i]; it.Raw == nl.raw {
						it.SetLine(l)
						m.coldChanged = true
						return
					}
				}
				return
			}
			if fi, item := findRaw(m.hot, nl, m.drop); fi >= 0 {
				m.remove(fi, item)
			}
			m.take(nl.rel, l)
			return
		}
		if g, ok := m.gone[old]; ok && !g.line.Superseded() {
			l := g.line
			l.SupersededBy = by
			m.take(g.rel, l)
			delete(m.gone, old)
		}
	}
}

// findRaw is where the hot file of nl still holds its line as it was (the
// index of the file and of the item), -1 when it does not.
func findRaw(hot []*editedFile, nl namedLine, drop map[*memline.File]map[int]bool) (int, int) {
	for fi, f := range hot {
		if f.rel != nl.rel {
			continue
		}
		for _, i := range f.after.Facts() {
			if f.after.Items[i].Raw == nl.raw && !drop[f.after][i] {
				return fi, i
			}
		}
	}
	return -1, -1
}

// goneLine is a fact an edit removed from a hot file.
type goneLine struct {
	rel  string
	line memline.Line
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// idOnly counts, per workspace-relative path, the lines of the copy that
// differ from the commit it was made from by their id alone (or a cold
// line's words): not a change of what memory says.
func (s *stage) idOnly() (map[string]int, error) {
	out := map[string]int{}
	for _, rel := range memory.TierFiles() {
		now, err := s.read(rel)
		if err != nil || now == nil || s.orig[rel] == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		was := map[string]int{}
		for _, it := range memline.ParseFile(s.orig[rel]).Items {
			was[it.Raw]++
		}
		n := 0
		for _, it := range memline.ParseFile(now).Items {
			if !it.Fact || was[it.Raw] > 0 {
				if was[it.Raw] > 0 {
					was[it.Raw]--
				}
				continue
			}
			l := it.Line
			if l.ID == "" {
				continue
			}
			l.ID = ""
			if was[l.String()] > 0 {
				was[l.String()]--
				n++
			}
		}
		if n > 0 {
			out[path.Join(s.scope.Dir(), rel)] = n
		}
	}
	return out, nil
}

// withoutIDChanges takes the lines that only gained an id (idOnly) out of
// a diff's counts, so that a Dream reports the changes to what memory
// says; it returns how many lines gained one.
func withoutIDChanges(files []FileChange, count int, idOnly map[string]int) ([]FileChange, int, int) {
	given := 0
	var out []FileChange
	for _, f := range files {
		n := idOnly[f.Path]
		given += n
		f.Added, f.Deleted, f.Changes = f.Added-n, f.Deleted-n, f.Changes-n
		count -= n
		if f.Changes > 0 || f.Added > 0 || f.Deleted > 0 {
			out = append(out, f)
		}
	}
	return out, count, given
}
