package gitstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit describes one commit.
type Commit struct {
	SHA     string    // full 40-hex id
	Short   string    // first 8 hex digits
	Subject string    // first line of the message
	Body    string    // the rest, without the separating blank line
	When    time.Time // author time (seconds precision, the commit's zone)
	Parent  string    // full id of the first parent; "" for a root commit
}

// Commit records the tracked files as they are in the workspace, with the
// given one-line subject and optional body: the fixed ones, and every file
// a pattern matches in the workspace or in HEAD. It stages exactly those
// files (nothing else that may be staged is committed) and compares them
// byte for byte with HEAD; when none differs it returns ErrNothingToCommit
// and makes no commit. A tracked file missing from the workspace is removed
// from the tree.
//
// Status ignores differences in line endings alone, Commit does not (git
// does not either): callers that decide by Status whether there is something
// to record may still see such a change carried along in a later commit.
func (s *Store) Commit(subject, body string) (Commit, error) {
	defer s.lock()()
	if s.bare() {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, ErrNoWorkspace)
	}
	c, err := s.commitAll(subject, body)
	if err != nil {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, err)
	}
	return c, nil
}

// commitAll commits every tracked file: the fixed ones, and the pattern
// files in the workspace or in their line's commit.
func (s *Store) commitAll(subject, body string) (Commit, error) {
	var c Commit
	err := s.be.write(func() error {
		paths, err := s.trackedPaths(nil)
		if err != nil {
			return err
		}
		c, err = s.commitPaths(paths, subject, body)
		return err
	})
	return c, err
}

// CommitPaths is Commit of the listed tracked files alone (like
// `git commit -- <paths>`): the other tracked files keep their HEAD
// version in the commit, whatever the workspace holds. No path is
// ErrNothingToCommit, as is a list none of whose files changed; a path the
// store does not track is ErrNotTracked and nothing is committed.
func (s *Store) CommitPaths(paths []string, subject, body string) (Commit, error) {
	defer s.lock()()
	if s.bare() {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, ErrNoWorkspace)
	}
	c, err := s.commitListed(paths, subject, body)
	if err != nil {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, err)
	}
	return c, nil
}

func (s *Store) commitListed(paths []string, subject, body string) (Commit, error) {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		if !s.tracks(p) {
			return Commit{}, fmt.Errorf("%q: %w", p, ErrNotTracked)
		}
	}
	if len(paths) == 0 {
		return Commit{}, ErrNothingToCommit
	}
	return s.lockedCommit(paths, subject, body)
}

// headState is what HEAD points at.
type headState struct {
	name   plumbing.ReferenceName // the ref a commit moves: the branch, or HEAD when detached
	old    *plumbing.Reference    // its current value; nil on an unborn branch
	commit *object.Commit         // nil on an unborn branch
}

func (h headState) treeHash() plumbing.Hash {
	if h.commit == nil {
		return plumbing.ZeroHash
	}
	return h.commit.TreeHash
}

// head reads what HEAD points at. A damaged HEAD or branch (empty, torn,
// naming a commit the repository lacks, or a branch missing although the
// repository holds commits) is repaired first (repair.go); one that cannot
// be is a *DamagedError. So an unborn branch here means the repository
// holds no commit at all, the one state in which Open makes an initial
// commit: a repository with a history is never started afresh.
func (s *Store) head() (headState, error) {
	h, err := s.readHead()
	var d *refDamage
	if !errors.As(err, &d) {
		return h, err
	}
	if s.bare() {
		// A database never tears a ref: one naming no commit was written so.
		return headState{}, &DamagedError{Ref: d.name.String(), Path: "the database's refs", Problem: d.problem,
			Reason: "the repository names no other commit for it"}
	}
	if err := s.repairRef(d); err != nil {
		return headState{}, err
	}
	h, err = s.readHead()
	if errors.As(err, &d) {
		return headState{}, &DamagedError{Ref: d.name.String(), Path: s.refPath(d.name), Problem: d.problem,
			Reason: "a repair did not hold"}
	}
	return h, err
}

func (s *Store) readHead() (headState, error) {
	ref, err := s.be.ref(plumbing.HEAD)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return headState{}, &refDamage{name: plumbing.HEAD, problem: "is missing", unreadable: true}
	}
	var d *refDamage
	if errors.As(err, &d) {
		d.unreadable = true
		return headState{}, d
	}
	if err != nil {
		return headState{}, err
	}
	h := headState{name: plumbing.HEAD}
	if ref.Type() == plumbing.SymbolicReference {
		h.name = ref.Target()
		ref, err = s.be.ref(h.name)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			has, err := s.holdsCommits()
			if err != nil {
				return headState{}, err
			}
			if has {
				return headState{}, &refDamage{name: h.name, problem: "is missing although the repository holds commits"}
			}
			return h, nil // unborn branch: no commit yet
		}
		if err != nil {
			return headState{}, err
		}
		if ref.Type() != plumbing.HashReference {
			return headState{}, fmt.Errorf("read %s: symbolic references deeper than HEAD are not supported", h.name)
		}
	}
	h.old = ref
	h.commit, err = object.GetCommit(s.obj(), ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// go-git says "not found" for an object of another type too.
		return headState{}, &refDamage{name: h.name, problem: "names " + shortID(ref.Hash().String()) + ", which is no commit of the repository"}
	}
	if err != nil {
		return headState{}, fmt.Errorf("read HEAD commit %s: %w", shortID(ref.Hash().String()), err)
	}
	return h, nil
}

// blobState identifies a file version: present or not, its mode and its
// blob id. Two equal blobStates are the same bytes.
type blobState struct {
	exists bool
	mode   filemode.FileMode
	hash   plumbing.Hash
}

// workFile is a tracked file as found in the workspace.
type workFile struct {
	blobState
	data []byte
	info fs.FileInfo
}

// readWorking reads a tracked file the way git would record it: a regular
// file's bytes, or a symbolic link's target.
func (s *Store) readWorking(p string) (workFile, error) {
	if s.bare() {
		return workFile{}, nil
	}
	full := filepath.Join(s.dir, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return workFile{}, nil
	}
	if err != nil {
		return workFile{}, fmt.Errorf("stat %s: %w", p, err)
	}
	w := workFile{info: fi}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return workFile{}, fmt.Errorf("read link %s: %w", p, err)
		}
		w.data, w.mode = []byte(filepath.ToSlash(target)), filemode.Symlink
	case fi.Mode().IsRegular():
		if w.data, err = os.ReadFile(full); err != nil {
			return workFile{}, fmt.Errorf("read %s: %w", p, err)
		}
		w.mode = filemode.Regular
		if fi.Mode().Perm()&0o111 != 0 {
			w.mode = filemode.Executable
		}
	default:
		return workFile{}, fmt.Errorf("tracked path %s is not a regular file", p)
	}
	w.exists = true
	w.hash = plumbing.ComputeHash(plumbing.BlobObject, w.data)
	return w, nil
}

// lookup finds the file at p under the tree root (zero: the empty tree).
func (s *Store) lookup(root plumbing.Hash, p string) (blobState, error) {
	h := root
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if h.IsZero() {
			return blobState{}, nil
		}
		e, err := s.entry(h, seg)
		if err != nil {
			return blobState{}, err
		}
		if e == nil {
			return blobState{}, nil
		}
		if i == len(segs)-1 {
			if e.Mode == filemode.Dir {
				return blobState{}, nil // a directory is not the file we track
			}
			return blobState{exists: true, mode: e.Mode, hash: e.Hash}, nil
		}
		if e.Mode != filemode.Dir {
			return blobState{}, nil
		}
		h = e.Hash
	}
	return blobState{}, nil
}

func findEntry(entries []object.TreeEntry, name string) *object.TreeEntry {
	for i := range entries {
		if entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

// readBlob returns the content of a blob.
func (s *Store) readBlob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(s.obj(), h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", shortID(h.String()), err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", shortID(h.String()), err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", shortID(h.String()), err)
	}
	return data, nil
}

// lockedCommit is commitPaths as one write.
func (s *Store) lockedCommit(paths []string, subject, body string) (Commit, error) {
	var c Commit
	err := s.be.write(func() error {
		var err error
		c, err = s.commitPaths(paths, subject, body)
		return err
	})
	return c, err
}

// commitPaths commits the workspace state of paths, each on top of its
// line (one commit per line). The caller holds s.mu within a write.
func (s *Store) commitPaths(paths []string, subject, body string) (Commit, error) {
	msg, err := message(subject, body)
	if err != nil {
		return Commit{}, err
	}
	files := make(map[string]workFile, len(paths))
	for _, p := range paths {
		w, err := s.readWorking(p)
		if err != nil {
			return Commit{}, err
		}
		files[p] = w
	}
	out, err := s.commitEdits(files, msg)
	if err != nil {
		return Commit{}, err
	}
	// The commit is made. A stale index only confuses `git status` (it
	// would show our change reverted as staged); our own reads never use
	// the index, so this is a warning, not a failed commit.
	if err := s.writeIndex(files); err != nil {
		s.log.Warn("memory repository: commit made but the index was not updated",
			"commit", shortID(out[len(out)-1].commit.Hash.String()), "err", err)
	}
	return toCommit(out[len(out)-1].commit), nil
}

// message builds a git commit message: the subject line, then the body
// after a blank line.
func message(subject, body string) (string, error) {
	subject = strings.TrimSpace(subject)
	if subject == "" || strings.ContainsAny(subject, "\r\n") {
		return "", errors.New("the subject must be one non-empty line")
	}
	body = strings.Trim(body, " \t\r\n")
	if body == "" {
		return subject + "\n", nil
	}
	return subject + "\n\n" + body + "\n", nil
}

func toCommit(c *object.Commit) Commit {
	subject, body, _ := strings.Cut(strings.TrimLeft(c.Message, "\r\n"), "\n")
	out := Commit{
		SHA:     c.Hash.String(),
		Short:   shortID(c.Hash.String()),
		Subject: strings.TrimSpace(subject),
		Body:    strings.Trim(body, " \t\r\n"),
		When:    fixedZone(c.Author.When),
	}
	if len(c.ParentHashes) > 0 {
		out.Parent = c.ParentHashes[0].String()
	}
	return out
}

// fixedZone gives a commit time the same form whether it was just made or
// read back: git keeps only the seconds and the zone offset.
func fixedZone(t time.Time) time.Time {
	_, off := t.Zone()
	return time.Unix(t.Unix(), 0).In(time.FixedZone("", off))
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// storeObject writes an object unless the repository already has it.
func (s *Store) storeObject(t plumbing.ObjectType, data []byte) error {
	h := plumbing.ComputeHash(t, data)
	if s.obj().HasEncodedObject(h) == nil {
		return nil
	}
	obj := s.obj().NewEncodedObject()
	obj.SetType(t)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	_, err = s.obj().SetEncodedObject(obj)
	return err
}

// editTree returns the id of the tree base (zero: empty) with the edits
// applied (path -> new state; a state that does not exist removes the
// path), writing the new trees. Directories left empty disappear, as in git.
func (s *Store) editTree(base plumbing.Hash, edits map[string]workFile) (plumbing.Hash, int, error) {
	var entries []object.TreeEntry
	if !base.IsZero() {
		t, err := s.tree(base)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		entries = slices.Clone(t.Entries)
	}
	here := map[string]workFile{}
	below := map[string]map[string]workFile{}
	for p, w := range edits {
		dir, rest, nested := strings.Cut(p, "/")
		if !nested {
			here[p] = w
			continue
		}
		if below[dir] == nil {
			below[dir] = map[string]workFile{}
		}
		below[dir][rest] = w
	}
	set := func(e object.TreeEntry, keep bool) {
		i := slices.IndexFunc(entries, func(x object.TreeEntry) bool { return x.Name == e.Name })
		switch {
		case i >= 0 && keep:
			entries[i] = e
		case i >= 0:
			entries = slices.Delete(entries, i, i+1)
		case keep:
			entries = append(entries, e)
		}
	}
	for name, w := range here {
		set(object.TreeEntry{Name: name, Mode: w.mode, Hash: w.hash}, w.exists)
	}
	for name, sub := range below {
		subBase := plumbing.ZeroHash
		if e := findEntry(entries, name); e != nil && e.Mode == filemode.Dir {
			subBase = e.Hash
		}
		h, n, err := s.editTree(subBase, sub)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		set(object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}, n > 0)
	}
	sort.Sort(object.TreeEntrySorter(entries))
	t := &object.Tree{Entries: entries}
	obj := s.obj().NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, 0, fmt.Errorf("encode tree: %w", err)
	}
	if s.obj().HasEncodedObject(obj.Hash()) != nil {
		if _, err := s.obj().SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, 0, fmt.Errorf("store tree: %w", err)
		}
	}
	return obj.Hash(), len(entries), nil
}
