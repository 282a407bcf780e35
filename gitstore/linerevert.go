package gitstore

import (
	"slices"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// The line-level revert: undoing one commit's change to a file that may
// have changed since. Memory files are lists of lines, one fact each, and
// most changes append lines or rewrite a few; git's three-way merge would
// call two appends at the end of a file a conflict. Here the commit's own
// lines (those it added or changed) are followed through every later
// version of the file, one change at a time:
//
//   - a commit line still standing goes;
//   - the lines the commit removed or changed come back where they stood
//     (a marker for each of the commit's hunks travels with the file);
//   - every other line stays, hand edits and later changes included;
//   - where a later change removed or rewrote one of the commit's lines,
//     the person chooses (a conflict): keep the later lines, or undo the
//     whole change. A line the commit added that a later change only
//     removed is simply gone: there is nothing to choose.
//
// Following each later change, rather than diffing the commit's version
// with the one now, matters: across several changes a line removed next to
// one appended reads as one line rewritten, and would be a conflict that
// never happened.
//
// It is a pure function of the file's versions (before the commit, as the
// commit left it, each later one), so it is tested on its own
// (linerevert_test.go).

// fileLines is a file as lines, without their "\n". eol says the last line
// ends with one (true for an empty file); exists says there is a file at
// all (a commit that created a file has none before it).
type fileLines struct {
	lines  []string
	eol    bool
	exists bool
}

func splitLines(data []byte, exists bool) fileLines {
	t := fileLines{eol: true, exists: exists}
	s := string(data)
	if s == "" {
		return t
	}
	t.eol = strings.HasSuffix(s, "\n")
	t.lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return t
}

func (t fileLines) bytes() []byte {
	if len(t.lines) == 0 {
		return nil
	}
	s := strings.Join(t.lines, "\n")
	if t.eol {
		s += "\n"
	}
	return []byte(s)
}

// hunk says that a[ai:aj] became b[bi:bj] (one side may be empty).
type hunk struct{ ai, aj, bi, bj int }

// lineHunks is the shortest edit script from a to b, as hunks in order.
// Each distinct line is one rune for diffmatchpatch, whose bisection
// without a deadline (DiffTimeout 0) is exact and deterministic: a busy
// machine never makes the script, and with it a conflict, different.
func lineHunks(a, b []string) []hunk { return lineHunksWith(map[string]rune{}, a, b) }

// lineHunksWith is lineHunks numbering lines in ids, which a caller
// diffing many versions of one file shares between them.
func lineHunksWith(ids map[string]rune, a, b []string) []hunk {
	// The lines both share at the start and the end are no part of any
	// hunk: most versions of a memory file differ in a few lines, and
	// numbering thousands of equal ones would cost more than the diff.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	hs := middleHunks(ids, a[pre:len(a)-suf], b[pre:len(b)-suf])
	for i := range hs {
		hs[i].ai, hs[i].aj, hs[i].bi, hs[i].bj = hs[i].ai+pre, hs[i].aj+pre, hs[i].bi+pre, hs[i].bj+pre
	}
	return hs
}

// middleHunks is lineHunks of two texts that differ at both ends.
func middleHunks(ids map[string]rune, a, b []string) []hunk {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	if len(ids)+len(a)+len(b) > maxLineIDs {
		clear(ids) // numbers need only agree within one diff
	}
	runes := func(lines []string) []rune {
		out := make([]rune, len(lines))
		for i, l := range lines {
			r, ok := ids[l]
			if !ok {
				r = lineRune(len(ids))
				ids[l] = r
			}
			out[i] = r
		}
		return out
	}
	ra, rb := runes(a), runes(b)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	var out []hunk
	i, j := 0, 0
	open := false
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := len([]rune(d.Text))
		if d.Type == diffmatchpatch.DiffEqual {
			i, j, open = i+n, j+n, false
			continue
		}
		if !open {
			out = append(out, hunk{ai: i, aj: i, bi: j, bj: j})
			open = true
		}
		h := &out[len(out)-1]
		if d.Type == diffmatchpatch.DiffDelete {
			i += n
			h.aj = i
		} else {
			j += n
			h.bj = j
		}
	}
	return out
}

// maxLineIDs keeps the lines numbered below the last rune.
const maxLineIDs = 1_000_000

// lineRune numbers distinct lines with runes that survive a round trip
// through a Go string: none in the surrogate range, none invalid.
func lineRune(n int) rune {
	r := rune(n) + 1
	if r >= 0xD800 {
		r += 0x800
	}
	return r
}

// elem is a line of the file as it is followed through the later
// versions, or a marker: where a hunk of the commit stood, so that what
// it removed or changed comes back there.
type elem struct {
	text   string
	marker bool
	// hunk is the commit's hunk a marker stands for, a commit line
	// belongs to (own) or a later line was written in place of (rep);
	// -1 for any other line.
	hunk     int
	own, rep bool
	// later: a later change wrote the line.
	later bool
}

// Resolution says what a restore does where a later change touched the
// lines it would undo.
type Resolution int

const (
	// KeepLater leaves the lines the later change made: the restore undoes
	// the rest of the commit's change. The default.
	KeepLater Resolution = iota
	// UndoAll undoes the whole change: the lines the commit changed come
	// back as they stood before it, replacing what later changes made of
	// them.
	UndoAll
)

// hunkFate is what the undo makes of one hunk of the commit.
type hunkFate int

const (
	fateClean    hunkFate = iota // its lines stand as it left them: undone
	fateGone                     // it only added lines, which later changes removed: nothing to do
	fateBack                     // later changes put back what it had replaced: nothing to do
	fateConflict                 // later changes removed or rewrote its lines: the person chooses
)

// lineRevert is the undo of base→target (a commit's change), followed
// through the later versions of the file to the one standing now.
type lineRevert struct {
	base, current fileLines
	hunks         []hunk // base→target
	target        []string
	seq           []elem // the file now, with the markers
	touched       []bool // by hunk: a later change removed one of its lines
	fates         []hunkFate
	parts         []revertPart
	ids           map[string]rune // the lines of every version, numbered once
}

// revertPart is one stretch of the file after the undo, in order, for
// showing what the undo does.
type revertPart struct {
	kind partKind
	// kept: lines standing now that the undo leaves alone.
	kept []string
	// removed: lines the commit added or changed, still as it left them,
	// which the undo takes out; restored: what stood there before it,
	// which the undo puts back.
	removed, restored []string
	// now is what stands where the commit's lines were (kept by
	// KeepLater); before is what stood there before the commit (put back
	// by UndoAll); left is how the commit left them.
	now, before, left []string
}

type partKind int

const (
	partKept partKind = iota
	partUndo
	partConflict // the commit changed these lines, and so did a later change
)

// revertLines undoes the change base→target on the file as it stands now,
// line by line: later holds the file's versions after target, oldest
// first, the last being the one now (none: target is).
func revertLines(base, target fileLines, later ...fileLines) lineRevert {
	r := startRevert(base, target)
	prev := target.lines
	for _, v := range later {
		r.follow(prev, v.lines)
		prev = v.lines
		r.current = v
	}
	r.decide()
	r.parts = r.render()
	return r
}

// startRevert is the undo of base→target before any later version is
// followed.
func startRevert(base, target fileLines) lineRevert {
	r := lineRevert{base: base, current: target, target: target.lines, ids: map[string]rune{}}
	r.hunks = lineHunksWith(r.ids, base.lines, target.lines)
	r.touched = make([]bool, len(r.hunks))
	r.seq = r.marked()
	return r
}

// marked is the target's lines with a marker before each hunk of the
// commit and its lines marked as the commit's.
func (r *lineRevert) marked() []elem {
	seq := make([]elem, 0, len(r.target)+len(r.hunks))
	t := 0
	for k, h := range r.hunks {
		for ; t < h.bi; t++ {
			seq = append(seq, elem{text: r.target[t], hunk: -1})
		}
		seq = append(seq, elem{marker: true, hunk: k})
		for ; t < h.bj; t++ {
			seq = append(seq, elem{text: r.target[t], hunk: k, own: true})
		}
	}
	for ; t < len(r.target); t++ {
		seq = append(seq, elem{text: r.target[t], hunk: -1})
	}
	return seq
}

// follow carries the marked file through one later change, from the lines
// prev to next. A line a change removes goes (a commit line counts its
// hunk touched); a line a change writes in place of one of the commit's
// (or of a line written in place of one) is marked as written there; a
// marker inside what a change replaced moves before the replacement.
//
// Which written line stands in place of which removed one is decided by
// position within the change: a change that rewrites ten lines around one
// of the commit's (a deep Dream's merge, or many changes seen at once)
// replaces that one line by the line at its place, not by all ten.
func (r *lineRevert) follow(prev, next []string) {
	r.apply(prev, lineHunksWith(r.ids, prev, next), next)
}

// apply carries the marked file through the change hs from prev to next
// (follow).
func (r *lineRevert) apply(prev []string, hs []hunk, next []string) {
	out := make([]elem, 0, len(r.seq)+len(next)-len(prev))
	i, line := 0, 0 // position in r.seq, and the line of prev it reaches
	copyTo := func(stop int) {
		for i < len(r.seq) && (r.seq[i].marker || line < stop) {
			if !r.seq[i].marker {
				line++
			}
			out = append(out, r.seq[i])
			i++
		}
	}
	for _, h := range hs {
		copyTo(h.ai)
		var removed []elem
		var moved []movedMarker
		for line < h.aj {
			e := r.seq[i]
			i++
			if e.marker {
				moved = append(moved, movedMarker{e, len(removed)})
				continue
			}
			if e.own {
				r.touched[e.hunk] = true
			}
			removed = append(removed, e)
			line++
		}
		written := next[h.bi:h.bj]
		// Written line j stands in place of removed line j·R/W; a marker
		// before removed line p goes before the first written line in
		// place of it or of a later one.
		R, W := len(removed), len(written)
		for j := 0; j <= W; j++ {
			for len(moved) > 0 && (j == W || moved[0].before*W <= j*R) {
				out = append(out, moved[0].e)
				moved = moved[1:]
			}
			if j == W {
				break
			}
			in := -1
			if R > 0 {
				if e := removed[j*R/W]; e.own || e.rep {
					in = e.hunk
				}
			}
			out = append(out, elem{text: written[j], hunk: in, rep: in >= 0, later: true})
		}
	}
	copyTo(len(prev) + 1)
	r.seq = out
}

// movedMarker is a marker inside what a change removed: before the
// removed line numbered before.
type movedMarker struct {
	e      elem
	before int
}

// decide gives each hunk of the commit its fate.
func (r *lineRevert) decide() {
	r.fates = make([]hunkFate, len(r.hunks))
	for k, h := range r.hunks {
		if !r.touched[k] {
			continue
		}
		now := r.standing(k)
		before := r.base.lines[h.ai:h.aj]
		switch {
		case h.ai == h.aj && !slices.ContainsFunc(r.seq, func(e elem) bool { return e.rep && e.hunk == k }):
			r.fates[k] = fateGone
		case slices.Equal(now, before):
			r.fates[k] = fateBack
		default:
			r.fates[k] = fateConflict
		}
	}
}

// standing are the lines of hunk k standing now: the commit's, and those
// later changes wrote in their place.
func (r *lineRevert) standing(k int) []string {
	var out []string
	for _, e := range r.seq {
		if !e.marker && e.hunk == k {
			out = append(out, e.text)
		}
	}
	return out
}

// render walks the file now and says what the undo does to each stretch.
func (r *lineRevert) render() []revertPart {
	var parts []revertPart
	undo := map[int]int{} // hunk → its part
	keep := func(text string) {
		if n := len(parts); n > 0 && parts[n-1].kind == partKept {
			parts[n-1].kept = append(parts[n-1].kept, text)
			return
		}
		parts = append(parts, revertPart{kind: partKept, kept: []string{text}})
	}
	for i, e := range r.seq {
		switch {
		case e.marker && r.fates[e.hunk] == fateClean:
			h := r.hunks[e.hunk]
			restored := r.base.lines[h.ai:h.aj]
			if h.bi == h.bj && r.broughtBack(i, restored) {
				continue
			}
			undo[e.hunk] = len(parts)
			parts = append(parts, revertPart{kind: partUndo, restored: slices.Clone(restored)})
		case e.marker && r.fates[e.hunk] == fateConflict:
			h := r.hunks[e.hunk]
			parts = append(parts, revertPart{kind: partConflict, now: r.standing(e.hunk),
				before: slices.Clone(r.base.lines[h.ai:h.aj]), left: slices.Clone(r.target[h.bi:h.bj])})
		case e.marker:
		case r.drops(e, KeepLater) && r.drops(e, UndoAll):
			p, ok := undo[e.hunk]
			if !ok {
				undo[e.hunk] = len(parts)
				parts = append(parts, revertPart{kind: partUndo})
				p = len(parts) - 1
			}
			parts[p].removed = append(parts[p].removed, e.text)
		case e.hunk >= 0 && r.fates[e.hunk] == fateConflict:
			// Shown in its conflict.
		default:
			keep(e.text)
		}
	}
	return parts
}

// drops says the undo, resolved as res says, takes the line e out.
func (r *lineRevert) drops(e elem, res Resolution) bool {
	if e.marker || e.hunk < 0 {
		return false
	}
	switch r.fates[e.hunk] {
	case fateClean, fateGone:
		return e.own
	case fateConflict:
		return res == UndoAll
	}
	return false
}

// restores is what the undo, resolved as res says, puts back at the
// marker at i.
func (r *lineRevert) restores(i int, res Resolution) []string {
	e := r.seq[i]
	h := r.hunks[e.hunk]
	before := r.base.lines[h.ai:h.aj]
	switch r.fates[e.hunk] {
	case fateClean:
		if h.bi == h.bj && r.broughtBack(i, before) {
			return nil
		}
		return before
	case fateConflict:
		if res == UndoAll {
			return before
		}
	}
	return nil
}

// broughtBack says the lines a later change wrote right after the marker
// at i are lines, exactly: the lines the commit removed from there are
// back already.
func (r *lineRevert) broughtBack(i int, lines []string) bool {
	if len(lines) == 0 {
		return false
	}
	var after []string
	for _, e := range r.seq[i+1:] {
		if e.marker {
			continue
		}
		if !e.later || len(after) == len(lines) {
			break
		}
		after = append(after, e.text)
	}
	return slices.Equal(after, lines)
}

// result is the file after the undo, conflicts resolved as res says. A
// file the commit created is gone again when nothing is left of it.
func (r lineRevert) result(res Resolution) fileLines {
	var lines []string
	for i, e := range r.seq {
		switch {
		case e.marker:
			lines = append(lines, r.restores(i, res)...)
		case !r.drops(e, res):
			lines = append(lines, e.text)
		}
	}
	out := fileLines{lines: lines, exists: true, eol: true}
	switch {
	case len(lines) == 0:
		// Nothing left: no file, unless there was one before the commit
		// and still is.
		out.exists = r.base.exists && r.current.exists
	case slices.Equal(lines, r.base.lines):
		// Back as before the commit, its last newline (or none) too.
		out.eol = r.base.eol
	case r.current.exists && len(r.current.lines) > 0:
		out.eol = r.current.eol
	}
	return out
}

// conflicts counts the places where a later change touched the commit's
// lines.
func (r lineRevert) conflicts() int {
	n := 0
	for _, f := range r.fates {
		if f == fateConflict {
			n++
		}
	}
	return n
}
