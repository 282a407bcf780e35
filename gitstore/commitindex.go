package gitstore

import (
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The commit index lists the history, one line per commit in the order the
// commits were made, of the branch and of every scope's line (lines.go):
// id, first parent, author time, the line, which tracked files the commit
// changed, subject. Latest and Log search it instead of reading every
// commit object (and filter by the files a commit changed without reading
// its trees), Restore finds the commits a restore undoes in it instead of
// reading every tree since the target (at 10,000 commits that was 0.3 s
// and 0.8 s), and FileAt finds in it where a line stood when another
// line's commit was made.
//
// It is a cache and never the authority. It is stored by the backend (in
// <gitdir>/dreamgate-commits, or a database's table); it is checked
// against the refs before every use (the branch's each time, the lines'
// when the backend says one may have moved) and caught up by walking back
// from each ref that moved to the newest commit it knows (someone
// committed with the git command line, another process), or rebuilt by
// walking every line when it does not know them (missing, corrupt, a
// reset, other tracking rules, an earlier version's file); the rebuilt
// order is the commits' committer times, which the Store keeps rising
// across lines. Each line carries a checksum and each commit line's parent
// must be its line's previous commit, so a torn append or a damaged file
// is rebuilt, not believed. The commits it answers with are read from the
// repository and checked before they are returned.
//
// Version 2 named the changed files by path: the tracked set grows as scope
// folders appear, so version 1's bit per tracked file (by its position in
// a fixed list) could not follow it. A "path" line gives the next number to
// a path; commit lines list the numbers of the paths they changed. Paths
// are numbered in the order they first appear, so an append adds the new
// paths' lines before the commit lines that use them. Version 3 adds each
// commit's line.
const (
	indexFile     = "dreamgate-commits"
	indexHeader   = "dreamgate commit index v3 "
	indexHeaderV1 = "dreamgate commit index v1 "
	indexHeaderV2 = "dreamgate commit index v2 "
	pathLine      = "path "
)

// indexEntry is one commit of the history: of the branch, or of a scope's
// line (lines.go).
type indexEntry struct {
	id, parent plumbing.Hash // parent: the first, on the commit's line; zero for a root commit
	when       int64         // author time, Unix seconds
	offset     int           // author time zone, seconds east of UTC
	line       line          // the line the commit was made on
	// holds: a commit of the branch whose tree holds the lines folder (an
	// earlier version's, or one before the split), which versions every
	// scope.
	holds   bool
	changed []int32 // the index's numbers of the tracked files the commit changed against its first parent
	subject string
}

// commitIndex is the loaded index: the commits of every line in the order
// they were made, oldest first, and the paths its entries name.
type commitIndex struct {
	entries []indexEntry
	pos     map[plumbing.Hash]int
	last    map[line]int     // the newest entry of each line
	legacy  int              // the newest entry of the branch that holds every scope; -1: none
	paths   []string         // by number
	num     map[string]int32 // paths' numbers
	size    int64            // the stored index as we last wrote or read it (its length); -1: not stored
	defined int              // paths whose line the stored index holds (the first ones)
}

func newCommitIndex() *commitIndex {
	return &commitIndex{pos: map[plumbing.Hash]int{}, last: map[line]int{}, num: map[string]int32{}, size: -1, legacy: -1}
}

// head is the newest commit of all lines.
func (x *commitIndex) head() plumbing.Hash {
	if len(x.entries) == 0 {
		return plumbing.ZeroHash
	}
	return x.entries[len(x.entries)-1].id
}

// tip is the newest commit of line l the index knows (zero: none).
func (x *commitIndex) tip(l line) plumbing.Hash {
	if i, ok := x.last[l]; ok {
		return x.entries[i].id
	}
	return plumbing.ZeroHash
}

// find is the position of the commit id; a nil index has none.
func (x *commitIndex) find(id plumbing.Hash) (int, bool) {
	if x == nil {
		return 0, false
	}
	i, ok := x.pos[id]
	return i, ok
}

// add appends e, which changed the files paths (their numbers are given
// here, new paths the next ones).
func (x *commitIndex) add(e indexEntry, paths []string) {
	e.changed = nil
	for _, p := range paths {
		n, ok := x.num[p]
		if !ok {
			n = int32(len(x.paths))
			x.num[p] = n
			x.paths = append(x.paths, p)
		}
		e.changed = append(e.changed, n)
	}
	x.push(e)
}

// push appends e, whose path numbers are the index's.
func (x *commitIndex) push(e indexEntry) {
	x.pos[e.id] = len(x.entries)
	x.last[e.line] = len(x.entries)
	if e.line == "" && e.holds {
		x.legacy = len(x.entries)
	}
	x.entries = append(x.entries, e)
}

// parentOK reports whether e may follow the entries so far: its parent is
// its line's newest commit; a scope line's first commit may also build on
// a commit of the branch that held every scope, or on none.
func (x *commitIndex) parentOK(e indexEntry) bool {
	if i, ok := x.last[e.line]; ok {
		return e.parent == x.entries[i].id
	}
	if e.parent.IsZero() {
		return true
	}
	i, ok := x.pos[e.parent]
	return ok && e.line != "" && x.entries[i].line == "" && x.entries[i].holds
}

// at is the position of line l's commit as it stood when the commit at
// position p was made: its newest commit no newer than p, or for a scope
// with none yet the newest commit of the branch that held every scope; -1
// when the line had none.
func (x *commitIndex) at(l line, p int) int {
	if i, ok := x.last[l]; ok && i <= p {
		return i
	}
	if _, own := x.last[l]; !own && l != "" && x.legacy >= 0 && x.legacy <= p {
		return x.legacy // no commit of its own: where the branch last held it
	}
	for i := min(p, len(x.entries)-1); i >= 0; i-- {
		e := &x.entries[i]
		if e.line == l || l != "" && e.line == "" && e.holds {
			return i
		}
	}
	return -1
}

// changedPaths are the paths e changed.
func (x *commitIndex) changedPaths(e indexEntry) []string {
	out := make([]string, len(e.changed))
	for i, n := range e.changed {
		out[i] = x.paths[n]
	}
	return out
}

// admits returns whether an entry changed a file keep accepts; every entry
// when keep is nil. keep is asked once per path the index knows.
func (x *commitIndex) admits(keep func(string) bool) func(*indexEntry) bool {
	if keep == nil {
		return func(*indexEntry) bool { return true }
	}
	ok := make([]bool, len(x.paths))
	for i, p := range x.paths {
		ok[i] = keep(p)
	}
	return func(e *indexEntry) bool {
		for _, n := range e.changed {
			if ok[n] {
				return true
			}
		}
		return false
	}
}

func (e indexEntry) commit() Commit {
	id := e.id.String()
	c := Commit{
		SHA:     id,
		Short:   shortID(id),
		Subject: e.subject,
		When:    time.Unix(e.when, 0).In(time.FixedZone("", e.offset)),
	}
	if !e.parent.IsZero() {
		c.Parent = e.parent.String()
	}
	return c
}

// diffTracked appends to out the tracked files that differ between the
// trees a and b (zero: empty), in path order, entering only the
// directories that differ and may hold a tracked file. A tracked path that
// is a directory on one side counts as missing there, as in lookup.
func (s *Store) diffTracked(a, b plumbing.Hash, dir string, depth int, rules []rule, trees treeCache, out *[]string) error {
	if a == b {
		return nil
	}
	ea, err := trees.get(s, a)
	if err != nil {
		return err
	}
	eb, err := trees.get(s, b)
	if err != nil {
		return err
	}
	for i, j := 0, 0; i < len(ea) || j < len(eb); {
		var x, y *object.TreeEntry
		switch {
		case j == len(eb) || i < len(ea) && ea[i].Name < eb[j].Name:
			x = &ea[i]
			i++
		case i == len(ea) || eb[j].Name < ea[i].Name:
			y = &eb[j]
			j++
		default:
			x, y = &ea[i], &eb[j]
			i, j = i+1, j+1
		}
		name := ""
		if x != nil {
			name = x.Name
		} else {
			name = y.Name
		}
		if x != nil && y != nil && x.Mode == y.Mode && x.Hash == y.Hash || !validName(name) {
			continue
		}
		leaf, deeper := step(rules, depth, name)
		p := dir + name
		if leaf && p != ignoreFile && fileOf(x) != fileOf(y) {
			*out = append(*out, p)
		}
		if len(deeper) > 0 {
			if da, db := dirOf(x), dirOf(y); da != db {
				if err := s.diffTracked(da, db, p+"/", depth+1, deeper, trees, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fileOf is the file a tree entry holds (none for a directory).
func fileOf(e *object.TreeEntry) blobState {
	if e == nil || e.Mode == filemode.Dir {
		return blobState{}
	}
	return blobState{exists: true, mode: e.Mode, hash: e.Hash}
}

// dirOf is the tree a tree entry holds (zero for a file).
func dirOf(e *object.TreeEntry) plumbing.Hash {
	if e == nil || e.Mode != filemode.Dir {
		return plumbing.ZeroHash
	}
	return e.Hash
}

// treeCache keeps the trees a history walk read, their entries sorted by
// name: each step diffs a commit's trees against its parent's, and the
// next step the parent's against the grandparent's. Trees not used in the
// last two steps are dropped.
type treeCache map[plumbing.Hash]*cachedTree

type cachedTree struct {
	entries []object.TreeEntry
	used    bool
}

func (c treeCache) get(s *Store, h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	if t, ok := c[h]; ok {
		t.used = true
		return t.entries, nil
	}
	t, err := s.tree(h)
	if err != nil {
		return nil, err
	}
	entries := t.Entries
	// Git orders a directory as if its name ended in '/'.
	less := func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(entries, less) {
		entries = slices.Clone(entries)
		slices.SortFunc(entries, less)
	}
	c[h] = &cachedTree{entries: entries, used: true}
	return entries, nil
}

// age drops the trees the last step did not use and marks the rest unused.
func (c treeCache) age() {
	for h, t := range c {
		if !t.used {
			delete(c, h)
		}
		t.used = false
	}
}

// trackedState looks up every fixed tracked file in a tree, as lookup
// does, but reads each tree once (a repair compares the ends of several
// lines of history by them).
func (s *Store) trackedState(root plumbing.Hash) ([]blobState, error) {
	trees := map[plumbing.Hash]*object.Tree{}
	st := make([]blobState, len(s.tracked))
	for i, p := range s.tracked {
		segs := strings.Split(p, "/")
		for h, j := root, 0; !h.IsZero(); j++ {
			t := trees[h]
			if t == nil {
				var err error
				if t, err = s.tree(h); err != nil {
					return nil, err
				}
				trees[h] = t
			}
			e := findEntry(t.Entries, segs[j])
			if e == nil {
				break
			}
			if j == len(segs)-1 {
				if e.Mode != filemode.Dir { // a directory is not the file we track
					st[i] = blobState{exists: true, mode: e.Mode, hash: e.Hash}
				}
				break
			}
			if e.Mode != filemode.Dir {
				break
			}
			h = e.Hash
		}
	}
	return st, nil
}
