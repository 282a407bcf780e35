package gitstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// commits returns the commit index caught up with the refs. A repository
// without commits has an empty index. Storing it is best effort: a failure
// is logged and the index in memory is used anyway.
func (s *Store) commits() (*commitIndex, error) {
	quick, hasQuick := s.be.quickStamp()
	if hasQuick && s.idx != nil && quick == s.verified {
		return s.idx, nil // no ref moved since the index was checked
	}
	head, err := s.head()
	if err != nil {
		return nil, err
	}
	if s.idx == nil {
		s.idx, s.refStamp = s.loadIndex(), ""
	} else if now, err := s.be.index().stamp(); err == nil && now != s.idx.size {
		// Another writer (a process, a repair) stored the index anew.
		s.idx, s.refStamp = s.loadIndex(), ""
	}
	tips := map[line]plumbing.Hash{"": plumbing.ZeroHash}
	if head.commit != nil {
		tips[""] = head.commit.Hash
	}
	var stamp string
	all := false
	if s.linesOn() {
		since := s.refStamp
		if s.idx == nil {
			since = ""
		}
		refs, complete, now, err := s.be.lineRefs(s.linesDir, since)
		if err != nil {
			return nil, err
		}
		stamp, all = now, complete
		for name, h := range refs {
			if l, ok := s.lineOfRef(name); ok {
				tips[l] = h
			}
		}
	}
	if s.idx != nil && s.agrees(s.idx, tips, all) {
		s.refStamp, s.verified = stamp, quick
		return s.idx, nil
	}
	x, err := s.catchUp(s.idx, tips, all)
	if err != nil {
		return nil, err
	}
	s.idx, s.refStamp, s.verified = x, stamp, quick
	return x, nil
}

// agrees reports whether the index's tip of every line in tips is the
// ref's, and, when tips lists every line (all), that the index knows no
// line whose ref is gone.
func (s *Store) agrees(x *commitIndex, tips map[line]plumbing.Hash, all bool) bool {
	for l, h := range tips {
		if x.tip(l) != h {
			return false
		}
	}
	if all {
		for l := range x.last {
			if _, ok := tips[l]; !ok && l != "" {
				return false
			}
		}
	}
	return true
}

// fresh is a commit an index walk found: its entry, the paths it changed
// and its committer time, which orders it among other lines' commits.
type fresh struct {
	e         indexEntry
	paths     []string
	committed int64
}

// catchUp returns the index of known (nil: none) with the commits of the
// lines in tips that it lacks, walking back from each tip to a commit it
// knows. When a line's walk does not end at what known had as its tip (a
// reset, a rewrite, a damaged index), the index is rebuilt from every
// line. The stored index is appended to or replaced.
func (s *Store) catchUp(known *commitIndex, tips map[line]plumbing.Hash, all bool) (*commitIndex, error) {
	if known != nil {
		n := len(known.entries)
		ok, err := s.walkInto(known, tips)
		if err != nil {
			return nil, err
		}
		if ok {
			s.appendIndex(known, known.entries[n:])
			return known, nil
		}
		if x, ok := s.truncated(known, tips); ok {
			return s.catchUp(x, tips, all)
		}
	}
	// Rebuild: every line from its ref.
	if !all && s.linesOn() {
		refs, _, _, err := s.be.lineRefs(s.linesDir, "")
		if err != nil {
			return nil, err
		}
		for name, h := range refs {
			if l, ok := s.lineOfRef(name); ok {
				tips[l] = h
			}
		}
	}
	x := newCommitIndex()
	ok, err := s.walkInto(x, tips)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("commit index: the lines of history do not meet")
	}
	s.saveIndex(x)
	return x, nil
}

// walkInto adds to x the commits of the lines in tips it lacks, merged
// in the order they were made: the branch is walked first, so that a
// scope's walk stops at the branch's commit its first commit builds on.
// ok is false when a walk did not meet x where it should (see walkLines).
func (s *Store) walkInto(x *commitIndex, tips map[line]plumbing.Hash) (bool, error) {
	walks, ok, err := s.walkLines(x, map[line]plumbing.Hash{"": tips[""]}, nil)
	if err != nil || !ok {
		return ok, err
	}
	branch := map[plumbing.Hash]fresh{}
	for _, f := range walks[""] {
		branch[f.e.id] = f
	}
	scopes := maps.Clone(tips)
	delete(scopes, "")
	more, ok, err := s.walkLines(x, scopes, branch)
	if err != nil || !ok {
		return ok, err
	}
	maps.Copy(walks, more)
	merge(walks, x)
	return true, nil
}

// truncated is known up to the branch's commit its walk reached, when no
// other line's commit came after that one (the branch was reset, as with
// git reset, in a store without lines or whose lines are older): the rest
// is rebuilt by the walk.
func (s *Store) truncated(known *commitIndex, tips map[line]plumbing.Hash) (*commitIndex, bool) {
	p := -1
	for c := tips[""]; !c.IsZero(); {
		if i, ok := known.pos[c]; ok {
			p = i
			break
		}
		co, err := object.GetCommit(s.obj(), c)
		if err != nil || len(co.ParentHashes) == 0 {
			break
		}
		c = co.ParentHashes[0]
	}
	if p < 0 || known.entries[p].line != "" {
		return nil, false
	}
	for _, e := range known.entries[p+1:] {
		if e.line != "" {
			return nil, false
		}
	}
	x := newCommitIndex()
	x.paths, x.num = slices.Clone(known.paths), maps.Clone(known.num)
	for _, e := range known.entries[:p+1] {
		x.push(e)
	}
	return x, true
}

// walkLines walks each line of tips back from its tip to a commit x
// knows (or one of branch, the branch's commits found but not yet in x),
// and returns the commits found, oldest first per line. ok is false when a
// walk met x other than at x's tip of that line (or, for a scope's first
// commits, at a commit of the branch that held every scope).
func (s *Store) walkLines(x *commitIndex, tips map[line]plumbing.Hash, branch map[plumbing.Hash]fresh) (map[line][]fresh, bool, error) {
	out := map[line][]fresh{}
	trees := treeCache{}
	for _, l := range slices.Sorted(maps.Keys(tips)) {
		h := tips[l]
		if h == x.tip(l) {
			continue
		}
		var found []fresh
		met := plumbing.ZeroHash
		for c := h; !c.IsZero(); {
			if _, ok := x.pos[c]; ok {
				met = c
				break
			}
			if f, ok := branch[c]; ok {
				if !f.e.holds {
					return nil, false, nil
				}
				met = c
				break
			}
			co, err := object.GetCommit(s.obj(), c)
			if err != nil {
				return nil, false, fmt.Errorf("read commit %s: %w", shortID(c.String()), err)
			}
			f, parent, err := s.indexStep(co, l, trees)
			if err != nil {
				return nil, false, err
			}
			found = append(found, f)
			c = parent
		}
		if _, inBranch := branch[met]; !inBranch && !s.meets(x, l, met) {
			return nil, false, nil
		}
		slices.Reverse(found)
		out[l] = found
	}
	return out, true, nil
}

// meets reports whether a walk of line l that stopped at met (zero: at a
// root commit) may go on from x: met is x's tip of the line, or the line
// is new to x and met is none, or a commit of the branch holding every
// scope.
func (s *Store) meets(x *commitIndex, l line, met plumbing.Hash) bool {
	if met == x.tip(l) {
		return true
	}
	if _, has := x.last[l]; has || l == "" {
		return false
	}
	i := x.pos[met]
	return x.entries[i].line == "" && x.entries[i].holds
}

// merge appends the walks' commits to x in the order they were made: the
// earliest committer time first among each line's next commit whose
// parent x holds already (the branch first, then by name, on a tie), so a
// line's commits keep their order whatever the clocks said. It returns
// what it added.
func merge(walks map[line][]fresh, x *commitIndex) []indexEntry {
	lines := slices.Sorted(maps.Keys(walks))
	var added []indexEntry
	for {
		best := -1
		for i, l := range lines {
			w := walks[l]
			if len(w) == 0 {
				continue
			}
			if p := w[0].e.parent; !p.IsZero() && x.tip(l) != p {
				if _, ok := x.pos[p]; !ok {
					continue // its parent comes from another line's walk first
				}
			}
			if best < 0 || w[0].committed < walks[lines[best]][0].committed {
				best = i
			}
		}
		if best < 0 {
			return added
		}
		l := lines[best]
		f := walks[l][0]
		walks[l] = walks[l][1:]
		x.add(f.e, f.paths)
		added = append(added, x.entries[len(x.entries)-1])
	}
}

// indexStep makes the entry of c on line l and the tracked files it
// changed against its first parent on that line, and returns that parent
// (zero for a root commit).
func (s *Store) indexStep(c *object.Commit, l line, trees treeCache) (fresh, plumbing.Hash, error) {
	e := indexEntry{id: c.Hash, when: c.Author.When.Unix(), subject: toCommit(c).Subject, line: l}
	_, e.offset = c.Author.When.Zone()
	parentRoot := plumbing.ZeroHash // a root commit's parent: nothing
	if len(c.ParentHashes) > 0 {
		e.parent = c.ParentHashes[0]
		p, err := object.GetCommit(s.obj(), e.parent)
		if err != nil {
			return fresh{}, e.parent, fmt.Errorf("read commit %s: %w", shortID(e.parent.String()), err)
		}
		parentRoot = p.TreeHash
	}
	paths, err := s.lineChanges(l, parentRoot, c.TreeHash, trees, &e.holds)
	if err != nil {
		return fresh{}, e.parent, err
	}
	trees.age()
	return fresh{e: e, paths: paths, committed: c.Committer.When.Unix()}, e.parent, nil
}

// lineChanges lists the tracked files of line l that differ between the
// commit trees a and b, in path order. For the branch, holds is set when b
// holds the lines folder: such a commit versions every scope, and every
// tracked file counts.
func (s *Store) lineChanges(l line, a, b plumbing.Hash, trees treeCache, holds *bool) ([]string, error) {
	var paths []string
	if l == "" {
		rules := s.lineRules("")
		h, err := s.holdsLines(b)
		if err != nil {
			return nil, err
		}
		if h {
			*holds, rules = true, s.rules
		}
		err = s.diffTracked(a, b, "", 0, rules, trees, &paths)
		return paths, err
	}
	ta, err := s.lineTree(l, a)
	if err != nil {
		return nil, err
	}
	tb, err := s.lineTree(l, b)
	if err != nil {
		return nil, err
	}
	err = s.diffTracked(ta, tb, s.lineDir(l)+"/", lineDepth(l), s.lineRules(l), trees, &paths)
	return paths, err
}

// indexCommit records a commit the store just made on line l on top of
// parent, when the index was current: paths are those it changed. When the
// index was not current the next use catches up by walking.
func (s *Store) indexCommit(x *commitIndex, c *object.Commit, l line, parent plumbing.Hash, paths []string) {
	if x == nil || x.tip(l) != parent && !(x.tip(l).IsZero() && s.meets(x, l, parent)) {
		s.idx = nil
		return
	}
	e := indexEntry{id: c.Hash, when: c.Author.When.Unix(), subject: toCommit(c).Subject, line: l}
	_, e.offset = c.Author.When.Zone()
	if len(c.ParentHashes) > 0 {
		e.parent = c.ParentHashes[0]
	}
	var tracked []string
	for _, p := range paths {
		if s.tracks(p) {
			tracked = append(tracked, p)
		}
	}
	slices.Sort(tracked)
	x.add(e, tracked)
}

// loadIndex reads the stored index; nil when there is none, it was made
// for other tracking rules or by an earlier version, or it is damaged in
// any way.
func (s *Store) loadIndex() *commitIndex {
	data, size, err := s.be.index().load()
	if err != nil {
		s.log.Warn("memory repository: commit index unreadable; rebuilding it", "err", err)
		return nil
	}
	if data == nil {
		return nil
	}
	if strings.HasPrefix(string(data), indexHeaderV1) || strings.HasPrefix(string(data), indexHeaderV2) {
		s.log.Info("memory repository: rebuilding the commit index in its new format (it records the paths each commit changed)")
		return nil
	}
	x, err := parseIndex(data, s.indexHeaderLine())
	if err != nil {
		s.log.Warn("memory repository: commit index damaged or out of date; rebuilding it", "err", err)
		return nil
	}
	x.size = size
	return x
}

// appendIndex stores entries, the last of x, after what is stored (with
// the paths they name first); when the stored index moved meanwhile, it
// stores x whole.
func (s *Store) appendIndex(x *commitIndex, entries []indexEntry) {
	if len(entries) == 0 {
		return
	}
	var b strings.Builder
	for _, p := range x.paths[x.defined:] {
		b.WriteString(formatPath(p))
	}
	for _, e := range entries {
		b.WriteString(formatEntry(e))
	}
	size, err := s.be.index().append(x.size, []byte(b.String()))
	if errors.Is(err, errIndexMoved) {
		s.saveIndex(x)
		return
	}
	if err != nil {
		s.log.Warn("memory repository: could not update the commit index", "err", err)
		x.size = -1
		return
	}
	x.size, x.defined = size, len(x.paths)
}

// saveIndex replaces the stored index with x: the header, then each
// commit after the lines of the paths it names first — the bytes appends
// make, so a rebuilt index reads as the one kept up.
func (s *Store) saveIndex(x *commitIndex) {
	var b strings.Builder
	b.WriteString(s.indexHeaderLine())
	defined := 0
	for _, e := range x.entries {
		for _, n := range e.changed {
			for ; defined <= int(n); defined++ {
				b.WriteString(formatPath(x.paths[defined]))
			}
		}
		b.WriteString(formatEntry(e))
	}
	for ; defined < len(x.paths); defined++ {
		b.WriteString(formatPath(x.paths[defined]))
	}
	size, err := s.be.index().replace([]byte(b.String()))
	if err != nil {
		s.log.Warn("memory repository: could not write the commit index", "err", err)
		x.size = -1
		return
	}
	x.size, x.defined = size, len(x.paths)
}

// forgetIndex drops an index that disagreed with the repository, so the
// next use rebuilds it from the history.
func (s *Store) forgetIndex(why string) {
	s.log.Warn("memory repository: commit index disagrees with the repository; rebuilding it", "why", why)
	s.idx = nil
	if _, err := s.be.index().replace(nil); err != nil {
		s.log.Warn("memory repository: could not remove the commit index", "err", err)
	}
}
