package gitstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// lineState is where a line stands now: its ref and the commit holding its
// files.
type lineState struct {
	line line
	ref  plumbing.ReferenceName
	old  *plumbing.Reference // the ref's value (nil: no ref yet)
	// commit holds the line's files (nil: none yet): the ref's, or for a
	// scope without a ref of its own the branch's commit that held every
	// scope (own false: its tree holds much more than the line's).
	commit *object.Commit
	own    bool
}

// tree is the tree of the line's files in its commit (zero: none).
func (st lineState) root() plumbing.Hash {
	if st.commit == nil {
		return plumbing.ZeroHash
	}
	return st.commit.TreeHash
}

// lineNow reads where line l stands, with x the current commit index.
func (s *Store) lineNow(l line, x *commitIndex) (lineState, error) {
	if l == "" {
		h, err := s.head()
		if err != nil {
			return lineState{}, err
		}
		return lineState{ref: h.name, old: h.old, commit: h.commit, own: true}, nil
	}
	st := lineState{line: l, ref: s.lineRef(l, "")}
	ref, err := s.be.ref(st.ref)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return lineState{}, fmt.Errorf("read %s: %w", st.ref, err)
	default:
		st.old = ref
		if st.commit, err = object.GetCommit(s.obj(), ref.Hash()); err != nil {
			return lineState{}, fmt.Errorf("read %s's commit %s: %w", st.ref, shortID(ref.Hash().String()), err)
		}
		i, ok := x.pos[ref.Hash()]
		st.own = !ok || x.entries[i].line == l
		return st, nil
	}
	if i := x.at(l, len(x.entries)-1); i >= 0 {
		if st.commit, err = object.GetCommit(s.obj(), x.entries[i].id); err != nil {
			return lineState{}, fmt.Errorf("read commit %s: %w", shortID(x.entries[i].id.String()), err)
		}
	}
	return st, nil
}

// made is one commit of a write, on its line.
type made struct {
	line   line
	commit *object.Commit
	parent plumbing.Hash
	paths  []string
}

// commitEdits makes one commit per line the edits touch (path -> new
// state; a state that does not exist removes the path), each on top of
// its line with the message msg, moves their refs at once, and records
// them in the commit index. It returns the commits in the order made (the
// branch's first); ErrNothingToCommit when every edit leaves its file as
// its line has it. The caller holds s.mu within a write.
func (s *Store) commitEdits(edits map[string]workFile, msg string) ([]made, error) {
	x, err := s.commits()
	if err != nil {
		return nil, err
	}
	byLine := map[line]map[string]workFile{}
	for p, w := range edits {
		l := s.lineOf(p)
		if byLine[l] == nil {
			byLine[l] = map[string]workFile{}
		}
		byLine[l][p] = w
	}
	last, err := s.lastCommitted(x)
	if err != nil {
		return nil, err
	}
	var out []made
	var ups []refUpdate
	for _, l := range slices.Sorted(maps.Keys(byLine)) {
		st, err := s.lineNow(l, x)
		if err != nil {
			return nil, err
		}
		changed := map[string]workFile{}
		for p, w := range byLine[l] {
			had, err := s.lookup(st.root(), p)
			if err != nil {
				return nil, err
			}
			if had != w.blobState {
				changed[p] = w
			}
		}
		if len(changed) == 0 {
			continue
		}
		c, err := s.makeCommit(st, changed, msg, &last)
		if err != nil {
			return nil, err
		}
		m := made{line: l, commit: c, paths: slices.Sorted(maps.Keys(changed))}
		if st.commit != nil {
			m.parent = st.commit.Hash
		}
		out = append(out, m)
		ups = append(ups, refUpdate{name: st.ref, new: plumbing.NewHashReference(st.ref, c.Hash), old: st.old})
	}
	if len(out) == 0 {
		return nil, ErrNothingToCommit
	}
	err = s.be.setRefs(ups)
	if errors.Is(err, storage.ErrReferenceHasChanged) {
		return nil, fmt.Errorf("move %s: %w", ups[0].name, ErrConcurrentUpdate)
	}
	if err != nil {
		return nil, fmt.Errorf("move %s: %w", ups[0].name, err)
	}
	n := len(x.entries)
	for _, m := range out {
		s.indexCommit(x, m.commit, m.line, m.parent, m.paths)
	}
	if s.idx == x {
		s.appendIndex(x, x.entries[n:])
		// Under the writer lock nobody else moved a line since commits()
		// checked them: the refs' stamp now is ours.
		if stamp, err := s.be.refsStamp(s.linesDir); err == nil {
			s.refStamp = stamp
		}
		if quick, ok := s.be.quickStamp(); ok {
			s.verified = quick
		}
	}
	return out, nil
}

// lastCommitted is the committer time of the newest commit of all lines:
// each commit the Store makes is at least a second newer, so the lines'
// order can be read back from the commits themselves.
func (s *Store) lastCommitted(x *commitIndex) (time.Time, error) {
	if len(x.entries) == 0 {
		return time.Time{}, nil
	}
	c, err := object.GetCommit(s.obj(), x.head())
	if err != nil {
		return time.Time{}, fmt.Errorf("read commit %s: %w", shortID(x.head().String()), err)
	}
	return c.Committer.When, nil
}

// makeCommit stores the edits' blobs, the tree of the line's files with
// the edits applied and a commit of it on top of the line (a scope's
// first commit on top of the branch's commit that held every scope), and
// returns it. *last is the newest committer time so far: the commit is
// stamped a second past it when the clock says no later, and moves it on.
// The ref is the caller's to move.
func (s *Store) makeCommit(st lineState, edits map[string]workFile, msg string, last *time.Time) (*object.Commit, error) {
	for p, w := range edits {
		if w.exists {
			if err := s.storeObject(plumbing.BlobObject, w.data); err != nil {
				return nil, fmt.Errorf("store %s: %w", p, err)
			}
		}
	}
	base, err := s.lineBase(st)
	if err != nil {
		return nil, err
	}
	tree, _, err := s.editTree(base, edits)
	if err != nil {
		return nil, err
	}
	return s.commitTree(st, tree, msg, last)
}

// commitTree stores a commit of tree on top of the line st with the
// message msg, stamped a second past *last when the clock says no later,
// and moves *last on.
func (s *Store) commitTree(st lineState, tree plumbing.Hash, msg string, last *time.Time) (*object.Commit, error) {
	now := s.now()
	author := object.Signature{Name: s.author.Name, Email: s.author.Email, When: time.Unix(now.Unix(), 0).In(now.Location())}
	committer := author
	if !last.IsZero() && committer.When.Unix() <= last.Unix() {
		committer.When = time.Unix(last.Unix()+1, 0).In(now.Location())
	}
	*last = committer.When
	c := &object.Commit{Author: author, Committer: committer, Message: msg, TreeHash: tree}
	if st.commit != nil {
		c.ParentHashes = []plumbing.Hash{st.commit.Hash}
	}
	obj := s.obj().NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode commit: %w", err)
	}
	var err error
	if c.Hash, err = s.obj().SetEncodedObject(obj); err != nil {
		return nil, fmt.Errorf("store commit: %w", err)
	}
	return c, nil
}

// lineBase is the tree a line's next commit edits: its commit's tree, or,
// for a scope's first commit on top of the branch's commit that held every
// scope, a tree holding that scope's folder alone.
func (s *Store) lineBase(st lineState) (plumbing.Hash, error) {
	if st.own || st.commit == nil {
		return st.root(), nil
	}
	sub, err := s.lineTree(st.line, st.commit.TreeHash)
	if err != nil || sub.IsZero() {
		return plumbing.ZeroHash, err
	}
	inner, err := s.storeTree([]object.TreeEntry{{Name: string(st.line), Mode: filemode.Dir, Hash: sub}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return s.storeTree([]object.TreeEntry{{Name: s.linesDir, Mode: filemode.Dir, Hash: inner}})
}

// storeTree stores a tree of the entries (sorted as git sorts them).
func (s *Store) storeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	t := &object.Tree{Entries: entries}
	obj := s.obj().NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	if s.obj().HasEncodedObject(obj.Hash()) != nil {
		if _, err := s.obj().SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("store tree: %w", err)
		}
	}
	return obj.Hash(), nil
}
