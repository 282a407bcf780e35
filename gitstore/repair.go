package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Repair of a damaged HEAD or branch. Our own writes can no longer tear a
// ref (refs.go), but an older dreamgate (go-git's in-place write), a power
// loss or another tool can leave one empty, torn, or naming a commit that
// never reached the disk. go-git reads an empty branch as unborn, and the
// Store used to answer an unborn branch with a new initial commit, which
// left the whole history dangling. Now a damaged ref is put back to the
// commit the repository's own records name, and only when nothing names
// one does the Store stop with a *DamagedError; it never starts afresh.

// repairRef gives the damaged ref d a value again, under the ref's lock, and
// logs what it did. The caller re-reads the ref.
func (s *Store) repairRef(d *refDamage) error {
	if d.unreadable {
		return s.repairHEAD(d)
	}
	l, err := s.lockRef(d.name)
	if err != nil {
		return fmt.Errorf("repair %s: %w", d, err)
	}
	defer l.release()
	// Another process may have repaired it while we waited for the lock.
	if _, err := s.readHead(); !errors.As(err, new(*refDamage)) {
		return err
	}
	tip, from, err := s.findTip(d)
	if err != nil {
		return err
	}
	if tip.IsZero() {
		// No commit anywhere: the branch is unborn, as in a new repository
		// (a kill during the very first commit).
		if err := os.Remove(l.target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("repair %s: %w", d, err)
		}
		s.log.Warn("memory repository: removed a damaged branch from a repository without commits",
			"ref", string(d.name), "problem", d.problem)
		return nil
	}
	if err := l.commit(tip.String() + "\n"); err != nil {
		return fmt.Errorf("repair %s: %w", d, err)
	}
	s.log.Warn("memory repository: repaired a damaged branch",
		"ref", string(d.name), "problem", d.problem, "commit", shortID(tip.String()), "from", from)
	return nil
}

// repairHEAD points an unreadable or missing HEAD at the repository's one
// branch (refs/heads/main when it has none yet: a kill while go-git wrote
// HEAD for a new repository).
func (s *Store) repairHEAD(d *refDamage) error {
	l, err := s.lockRef(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("repair %s: %w", d, err)
	}
	defer l.release()
	if b, err := os.ReadFile(l.target); err == nil {
		if _, err := parseRef(plumbing.HEAD, b); err == nil {
			return nil // repaired meanwhile
		}
	}
	branches, err := s.branches()
	if err != nil {
		return fmt.Errorf("repair %s: %w", d, err)
	}
	target := plumbing.ReferenceName(defaultHead)
	switch {
	case len(branches) == 1:
		target = branches[0]
	case len(branches) > 1:
		return &DamagedError{Ref: "HEAD", Path: l.target, Problem: d.problem,
			Reason: "several branches could be the current one (" + strings.Join(refStrings(branches), ", ") + ")"}
	}
	if err := l.commit("ref: " + target.String() + "\n"); err != nil {
		return fmt.Errorf("repair %s: %w", d, err)
	}
	s.log.Warn("memory repository: repaired HEAD", "problem", d.problem, "now", target.String())
	return nil
}

func refStrings(names []plumbing.ReferenceName) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n.String()
	}
	return out
}

// branches lists the branches, loose and packed.
func (s *Store) branches() ([]plumbing.ReferenceName, error) {
	var out []plumbing.ReferenceName
	root := filepath.Join(s.commonDir, "refs", "heads")
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() && !strings.HasSuffix(p, ".lock") {
			rel, err := filepath.Rel(s.commonDir, p)
			if err != nil {
				return err
			}
			out = append(out, plumbing.ReferenceName(filepath.ToSlash(rel)))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	packed, err := os.ReadFile(filepath.Join(s.commonDir, "packed-refs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for line := range strings.SplitSeq(string(packed), "\n") {
		if _, name, ok := strings.Cut(strings.TrimRight(line, "\r"), " "); ok && strings.HasPrefix(name, "refs/heads/") {
			out = append(out, plumbing.ReferenceName(name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// holdsCommits reports whether the repository has any commit object. It
// stops at the first: in a new repository there is none to look at.
func (s *Store) holdsCommits() (bool, error) {
	iter, err := s.obj().IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		return false, fmt.Errorf("list commits: %w", err)
	}
	defer iter.Close()
	_, err = iter.Next()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list commits: %w", err)
	}
	return true, nil
}

// commitNode is what a repair needs of a commit.
type commitNode struct {
	parents []plumbing.Hash
	tree    plumbing.Hash
	when    int64 // committer time, Unix seconds
}

// findTip decides which commit the damaged ref d should name, and says
// from what:
//
//   - what the repository recorded, when any of it still exists: the
//     newest of the commit index's tip, the reflog's last entry, ORIG_HEAD
//     and the packed-refs value (the one the others are ancestors of). The
//     commit index is written when history is read, so it may be behind;
//     the search goes on among the commits built on that record.
//   - among those commits (all commits when nothing was recorded): the one
//     line of history's end, when the commits form one line (a kill after
//     the commit object was written and before the branch was leaves its
//     commit as that end);
//   - else, of the several ends, the newest whose tracked files are the
//     memory files (as the workspace or git's index has them).
//
// Otherwise nothing says which line of history is the branch: a
// *DamagedError. No commit at all: the zero hash (the branch is unborn).
func (s *Store) findTip(d *refDamage) (plumbing.Hash, string, error) {
	all, err := s.scanCommits()
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("repair %s: %w", d, err)
	}
	if len(all) == 0 {
		return plumbing.ZeroHash, "", nil
	}
	base, from := s.knownTip(d.name, all)
	pool := all
	if !base.IsZero() {
		pool = descendants(base, all)
	}
	ends := lineEnds(pool)
	if len(ends) == 1 {
		switch {
		case base.IsZero():
			return ends[0], "the only commit no other commit builds on", nil
		case ends[0] != base:
			return ends[0], from + ", then the commits built on it", nil
		}
		return base, from, nil
	}
	want := s.memoryStates()
	var best plumbing.Hash
	for _, id := range ends {
		if !best.IsZero() && all[id].when <= all[best].when {
			continue
		}
		st, err := s.trackedState(all[id].tree)
		if err != nil {
			continue
		}
		for _, w := range want {
			if slices.Equal(st, w) {
				best = id
			}
		}
	}
	if !best.IsZero() {
		if base.IsZero() {
			return best, "the newest line of history whose end the memory files match", nil
		}
		return best, from + ", then the newest line built on it whose end the memory files match", nil
	}
	short := make([]string, len(ends))
	for i, id := range ends {
		short[i] = shortID(id.String())
	}
	return plumbing.ZeroHash, "", &DamagedError{Ref: d.name.String(), Path: s.refPath(d.name), Problem: d.problem,
		Reason: fmt.Sprintf("nothing records which of %d lines of history (ending in %s) it was, and the memory files match none of their ends",
			len(ends), strings.Join(short, ", "))}
}

// descendants is base and every commit built on it.
func descendants(base plumbing.Hash, all map[plumbing.Hash]commitNode) map[plumbing.Hash]commitNode {
	children := map[plumbing.Hash][]plumbing.Hash{}
	for id, c := range all {
		for _, p := range c.parents {
			children[p] = append(children[p], id)
		}
	}
	out := map[plumbing.Hash]commitNode{}
	queue := []plumbing.Hash{base}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if _, seen := out[h]; seen {
			continue
		}
		out[h] = all[h]
		queue = append(queue, children[h]...)
	}
	return out
}

// lineEnds are the commits of pool no commit of pool builds on, sorted.
func lineEnds(pool map[plumbing.Hash]commitNode) []plumbing.Hash {
	parent := map[plumbing.Hash]bool{}
	for _, c := range pool {
		for _, p := range c.parents {
			parent[p] = true
		}
	}
	var ends []plumbing.Hash
	for id := range pool {
		if !parent[id] {
			ends = append(ends, id)
		}
	}
	slices.SortFunc(ends, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	return ends
}

// knownTip is the newest of the commits the repository recorded as the
// ref's value; zero when none of them exists.
func (s *Store) knownTip(name plumbing.ReferenceName, all map[plumbing.Hash]commitNode) (plumbing.Hash, string) {
	type candidate struct {
		id   plumbing.Hash
		from string
	}
	var cands []candidate
	add := func(id plumbing.Hash, from string) {
		if _, ok := all[id]; ok {
			cands = append(cands, candidate{id, from})
		}
	}
	if x := s.loadIndex(); x != nil {
		for i := len(x.entries) - 1; i >= 0; i-- {
			if _, ok := all[x.entries[i].id]; ok {
				add(x.entries[i].id, "the commit index")
				break
			}
		}
	}
	add(s.reflogTip(name, all), "the reflog")
	if ref, err := s.readRef("ORIG_HEAD"); err == nil && ref.Type() == plumbing.HashReference {
		add(ref.Hash(), "ORIG_HEAD")
	}
	if ref, err := s.packedRef(name); err == nil {
		add(ref.Hash(), "packed-refs")
	}
	if len(cands) == 0 {
		return plumbing.ZeroHash, ""
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.id != best.id && isAncestor(best.id, c.id, all) {
			best = c
		}
	}
	return best.id, best.from
}

// reflogTip is the newest value the ref's reflog records that is a commit
// of the repository. go-git writes no reflog; the git command line does.
func (s *Store) reflogTip(name plumbing.ReferenceName, all map[plumbing.Hash]commitNode) plumbing.Hash {
	p := s.refPath(name)
	dir := s.commonDir
	if !strings.HasPrefix(p, s.commonDir+string(filepath.Separator)) {
		dir = s.gitDir
	}
	b, err := os.ReadFile(filepath.Join(dir, "logs", filepath.FromSlash(name.String())))
	if err != nil {
		return plumbing.ZeroHash
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) < 2 {
			continue
		}
		if h, ok := parseHash(f[1]); ok {
			if _, ok := all[h]; ok {
				return h
			}
		}
	}
	return plumbing.ZeroHash
}

// isAncestor reports whether a is b or one of b's ancestors.
func isAncestor(a, b plumbing.Hash, all map[plumbing.Hash]commitNode) bool {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{b}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == a {
			return true
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		queue = append(queue, all[h].parents...)
	}
	return false
}

// scanCommits reads every commit object of the repository, loose and
// packed. Only a repair does. go-git's own iteration reads every loose
// object whole to learn its type (at 10,000 commits, 40,000 loose objects:
// 5-11 s and 500 MB allocated); a loose object's type is in its first bytes.
func (s *Store) scanCommits() (map[plumbing.Hash]commitNode, error) {
	all := map[plumbing.Hash]commitNode{}
	add := func(c *object.Commit) {
		all[c.Hash] = commitNode{parents: c.ParentHashes, tree: c.TreeHash, when: c.Committer.When.Unix()}
	}
	rs, ok := s.obj().(*refStorer)
	if !ok {
		return nil, fmt.Errorf("unexpected repository storage %T", s.obj())
	}
	st := rs.Storage
	var loose []plumbing.Hash
	var in headerReader
	err := st.ForEachObjectHash(func(h plumbing.Hash) error {
		if t, err := s.looseType(h, &in); err == nil && t == plumbing.CommitObject {
			loose = append(loose, h)
		}
		return nil
	})
	if in.zr != nil {
		_ = in.zr.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("list loose objects: %w", err)
	}
	for _, h := range loose {
		c, err := object.GetCommit(s.obj(), h)
		if err != nil {
			// An unreadable commit can be no branch's tip.
			s.log.Warn("memory repository: unreadable commit object", "commit", shortID(h.String()), "err", err)
			continue
		}
		add(c)
	}
	packs, err := st.ObjectPacks()
	if err != nil {
		return nil, fmt.Errorf("list packs: %w", err)
	}
	for _, h := range packs {
		if err := s.packCommits(st, h, add); err != nil {
			return nil, fmt.Errorf("read pack %s: %w", shortID(h.String()), err)
		}
	}
	return all, nil
}

// looseType reads the type from a loose object's header ("commit 235\x00…",
// deflated). in reuses one buffer and one inflater for every object: new
// ones allocate about 45 KB an object.
func (s *Store) looseType(h plumbing.Hash, in *headerReader) (plumbing.ObjectType, error) {
	id := h.String()
	f, err := os.Open(filepath.Join(s.objDir, id[:2], id[2:]))
	if err != nil {
		return plumbing.InvalidObject, err
	}
	defer f.Close()
	if in.buf == nil {
		in.buf = bufio.NewReaderSize(f, 512)
	} else {
		in.buf.Reset(f)
	}
	if in.zr == nil {
		if in.zr, err = zlib.NewReader(in.buf); err != nil {
			return plumbing.InvalidObject, err
		}
	} else if err := in.zr.(zlib.Resetter).Reset(in.buf, nil); err != nil {
		return plumbing.InvalidObject, err
	}
	var head [16]byte
	n, _ := io.ReadFull(in.zr, head[:])
	name, _, ok := bytes.Cut(head[:n], []byte(" "))
	if !ok {
		return plumbing.InvalidObject, fmt.Errorf("object %s: no header", shortID(id))
	}
	return plumbing.ParseObjectType(string(name))
}

// headerReader is what looseType reuses.
type headerReader struct {
	buf *bufio.Reader
	zr  io.ReadCloser
}

// packCommits passes each commit of one pack to add.
func (s *Store) packCommits(st *filesystem.Storage, h plumbing.Hash, add func(*object.Commit)) error {
	name := "pack-" + h.String()
	idxFile, err := os.Open(filepath.Join(s.objDir, "pack", name+".idx"))
	if err != nil {
		return err
	}
	defer idxFile.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(idxFile).Decode(idx); err != nil {
		return err
	}
	fsys := st.Filesystem()
	packFile, err := fsys.Open(fsys.Join("objects", "pack", name+".pack"))
	if err != nil {
		return err
	}
	p := packfile.NewPackfile(idx, fsys, packFile, 0)
	defer p.Close()
	iter, err := p.GetByType(plumbing.CommitObject)
	if err != nil {
		return err
	}
	defer iter.Close()
	return iter.ForEach(func(o plumbing.EncodedObject) error {
		c, err := object.DecodeCommit(s.obj(), o)
		if err != nil {
			s.log.Warn("memory repository: unreadable commit object", "commit", shortID(o.Hash().String()), "err", err)
			return nil
		}
		add(c)
		return nil
	})
}

// memoryStates are the tracked files as the workspace has them and as git's
// index has them (the last commit the Store made, unless a kill came
// between that commit and the index update).
func (s *Store) memoryStates() [][]blobState {
	var out [][]blobState
	work := make([]blobState, len(s.tracked))
	ok := true
	for i, p := range s.tracked {
		w, err := s.readWorking(p)
		if err != nil {
			ok = false
			break
		}
		work[i] = w.blobState
	}
	if ok {
		out = append(out, work)
	}
	if idx, err := s.obj().Index(); err == nil {
		st := make([]blobState, len(s.tracked))
		found := false
		for _, e := range idx.Entries {
			if i := slices.Index(s.tracked, e.Name); i >= 0 && e.Stage == 0 {
				st[i] = blobState{exists: true, mode: e.Mode, hash: e.Hash}
				found = true
			}
		}
		if found {
			out = append(out, st)
		}
	}
	return out
}
