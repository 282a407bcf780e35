package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Copying a repository between engines: a workspace's into a database
// (dreamgate migrate --to-postgres) and a database's back into a workspace
// (dreamgate export). The objects are copied as they are, so every commit
// keeps its id, message, files and order, and the refs name the same
// commits.

// CopyResult is what CopyRepository did.
type CopyResult struct {
	// Objects is how many objects the destination lacked and got.
	Objects int
	// Moved are the refs it set or moved forward, sorted.
	Moved []string
	// Kept are the refs the destination had further on (the source's
	// value is in their history): left as they were, sorted.
	Kept []string
}

// copyBatch is how many objects one write of a copy stores.
const copyBatch = 2000

// CopyRepository copies every object and ref of src that dst lacks into
// dst, each ref only where dst has none or one src's is built on (moved
// forward); a ref dst has further on is kept. Run again, it copies
// nothing. Refs that went apart (each has commits the other lacks) are
// refused before any ref moves: ErrDiverged, naming them.
func CopyRepository(dst, src *Store) (CopyResult, error) {
	if dst == src {
		return CopyResult{}, errors.New("copy a repository into itself")
	}
	defer src.lock()()
	defer dst.lock()()
	var res CopyResult
	n, err := copyObjects(dst, src)
	res.Objects = n
	if err != nil {
		return res, fmt.Errorf("copy the memory repository's objects: %w", err)
	}
	moved, kept, err := copyRefs(dst, src)
	res.Moved, res.Kept = moved, kept
	if err != nil {
		return res, fmt.Errorf("copy the memory repository's refs: %w", err)
	}
	return res, nil
}

// CopyToDB copies the repository of src (a workspace's) into db, as
// CopyRepository does: into an empty database, whole; again, nothing. Open
// the database's repository with OpenDB after.
func CopyToDB(db DB, src *Store) (CopyResult, error) {
	dst := &Store{tracked: src.tracked, patterns: src.patterns, rules: src.rules, patRules: src.patRules,
		linesDir: src.linesDir, author: src.author, now: src.now, log: src.log, be: newDBBackend(db)}
	return CopyRepository(dst, src)
}

// ErrDiverged: a ref of the source and the destination have each commits
// the other lacks; a copy would lose some.
var ErrDiverged = errors.New("the two repositories' histories went apart")

// allObjects lists the ids of every object of s.
func (s *Store) allObjects() ([]plumbing.Hash, error) {
	if b, ok := s.be.(*dbBackend); ok {
		return b.objectIDs("")
	}
	iter, err := s.obj().IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var out []plumbing.Hash
	for {
		o, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o.Hash())
	}
	slices.SortFunc(out, compareHash)
	return slices.Compact(out), nil
}

func compareHash(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) }

// copyObjects stores in dst the objects of src it lacks, some thousands
// at a time: read in one look from a database, written in one statement
// into a database or as one pack into a git directory.
func copyObjects(dst, src *Store) (int, error) {
	all, err := src.allObjects()
	if err != nil {
		return 0, err
	}
	have, err := dst.allObjects()
	if err != nil {
		return 0, err
	}
	var missing []plumbing.Hash
	for _, h := range all {
		if _, ok := slices.BinarySearchFunc(have, h, compareHash); !ok {
			missing = append(missing, h)
		}
	}
	copied := 0
	for len(missing) > 0 {
		batch := missing[:min(copyBatch, len(missing))]
		objs, err := src.readObjects(batch)
		if err != nil {
			return copied, err
		}
		if err := dst.writeObjects(objs); err != nil {
			return copied, err
		}
		copied += len(batch)
		missing = missing[len(batch):]
	}
	return copied, nil
}

// readObjects reads the objects ids, in one look from a database.
func (s *Store) readObjects(ids []plumbing.Hash) ([]DBObject, error) {
	if b, ok := s.be.(*dbBackend); ok {
		keys := make([]string, len(ids))
		for i, h := range ids {
			keys[i] = h.String()
		}
		objs, err := b.st().tx.GetObjects(keys)
		if err == nil && len(objs) != len(ids) {
			err = fmt.Errorf("%d of %d objects found", len(objs), len(ids))
		}
		return objs, err
	}
	out := make([]DBObject, 0, len(ids))
	for _, h := range ids {
		o, err := s.obj().EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", shortID(h.String()), err)
		}
		r, err := o.Reader()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, DBObject{ID: h.String(), Kind: o.Type().String(), Data: data})
	}
	return out, nil
}

// writeObjects stores objs: in one write of a database, or as one pack of
// a git directory.
func (s *Store) writeObjects(objs []DBObject) error {
	if b, ok := s.be.(*dbBackend); ok {
		return b.write(func() error { return b.cur.tx.PutObjects(objs) })
	}
	mem := memory.NewStorage()
	hashes := make([]plumbing.Hash, 0, len(objs))
	for _, o := range objs {
		t, err := plumbing.ParseObjectType(o.Kind)
		if err != nil {
			return err
		}
		obj := &plumbing.MemoryObject{}
		obj.SetType(t)
		if _, err := obj.Write(o.Data); err != nil {
			return err
		}
		h, err := mem.SetEncodedObject(obj)
		if err != nil {
			return err
		}
		hashes = append(hashes, h)
	}
	pfw, ok := s.obj().(storer.PackfileWriter)
	if !ok {
		return fmt.Errorf("storage %T cannot write packs", s.obj())
	}
	w, err := pfw.PackfileWriter()
	if err != nil {
		return err
	}
	// No deltas: a copy is read once, and finding deltas among thousands of
	// versions of a file costs more than the space it saves (git gc packs
	// them tighter when asked).
	if _, err := packfile.NewEncoder(w, mem, false).Encode(hashes, 0); err != nil {
		_ = w.Close()
		return fmt.Errorf("encode pack: %w", err)
	}
	return w.Close()
}

// repoRefs lists s's refs: HEAD, the branch it names and every line's.
func (s *Store) repoRefs() (map[plumbing.ReferenceName]*plumbing.Reference, error) {
	out := map[plumbing.ReferenceName]*plumbing.Reference{}
	head, err := s.be.ref(plumbing.HEAD)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out[plumbing.HEAD] = head
	if head.Type() == plumbing.SymbolicReference {
		if b, err := s.be.ref(head.Target()); err == nil {
			out[b.Name()] = b
		} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, err
		}
	}
	if s.linesOn() {
		refs, _, _, err := s.be.lineRefs(s.linesDir, "")
		if err != nil {
			return nil, err
		}
		for name, h := range refs {
			if !h.IsZero() {
				out[name] = plumbing.NewHashReference(name, h)
			}
		}
	}
	return out, nil
}

// copyRefs sets dst's refs to src's where dst has none or an older one,
// all in one write. The objects are in dst already.
func copyRefs(dst, src *Store) (moved, kept []string, err error) {
	from, err := src.repoRefs()
	if err != nil {
		return nil, nil, err
	}
	err = dst.be.write(func() error {
		var ups []refUpdate
		var apart []string
		for _, name := range slices.Sorted(maps.Keys(from)) {
			ref := from[name]
			cur, err := dst.be.ref(name)
			switch {
			case errors.Is(err, plumbing.ErrReferenceNotFound):
				ups = append(ups, refUpdate{name: name, new: ref})
				continue
			case err != nil:
				return err
			case refValue(cur) == refValue(ref):
				continue
			case ref.Type() != plumbing.HashReference || cur.Type() != plumbing.HashReference:
				apart = append(apart, name.String())
				continue
			}
			switch {
			case dst.builtOn(ref.Hash(), cur.Hash()):
				ups = append(ups, refUpdate{name: name, new: ref, old: cur})
			case dst.builtOn(cur.Hash(), ref.Hash()):
				kept = append(kept, name.String())
			default:
				apart = append(apart, name.String())
			}
		}
		if len(apart) > 0 {
			return fmt.Errorf("%w: %v", ErrDiverged, apart)
		}
		for _, u := range ups {
			moved = append(moved, u.name.String())
		}
		if len(ups) == 0 {
			return nil
		}
		return dst.be.setRefs(ups)
	})
	if err == nil && len(moved) > 0 {
		dst.idx, dst.refStamp = nil, ""
	}
	return moved, kept, err
}

// builtOn reports whether the commit base is tip or on tip's first-parent
// history.
func (s *Store) builtOn(tip, base plumbing.Hash) bool {
	for c := tip; !c.IsZero(); {
		if c == base {
			return true
		}
		co, err := object.GetCommit(s.obj(), c)
		if err != nil || len(co.ParentHashes) == 0 {
			return false
		}
		c = co.ParentHashes[0]
	}
	return false
}
