package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Lines of history. With Options.Lines set (dreamgate sets "scopes"), each
// folder under that folder — a memory scope's — has a history of its own,
// on the ref refs/<Lines>/<name>, whose commits hold that folder's files
// alone; the branch HEAD names holds the other tracked files (the
// workspace root's). A commit of one scope so writes that scope's few
// objects, whatever the number of scopes: one branch holding every scope
// would write a fresh tree of all of them (10,000 entries, 252 KB) each
// time.
//
// The lines make one history: every commit the Store makes is newer than
// the last one it made on any line (its committer time is at least one
// second past that one's), so the commit index (commitindex.go) lists them
// in the order they were made, and a rebuild of it from the refs finds the
// same order. Head is the newest commit of all, CommitsAfter the commits
// made after one, FileAt reads a path as its line stood at a commit of any
// line, Checkout writes the files of the lines that changed between two.
//
// A repository of an earlier version holds every scope folder in its one
// branch. Open records, once, a commit on the branch that takes the
// folder out of it ("init: …", SplitSubject); each scope's line then
// starts from the branch's last commit before it: its first commit has that
// one as parent, so `git log refs/scopes/<name>` and every reader here go
// on into the shared history before the split. A scope with no commit of
// its own since reads its files there.

// line names a line of history: "" is the branch HEAD names, otherwise
// the name of a folder under Options.Lines.
type line string

// SplitSubject is the subject of the commit that takes the scope folders
// out of the branch of a repository that held them all.
const SplitSubject = "init: each scope's memory on a line of history of its own"

// linesOn reports whether the store keeps lines at all.
func (s *Store) linesOn() bool { return s.linesDir != "" }

// lineOf is the line the tracked path p is versioned on.
func (s *Store) lineOf(p string) line {
	if !s.linesOn() {
		return ""
	}
	rest, ok := strings.CutPrefix(p, s.linesDir+"/")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "/")
	if !ok || !validName(name) {
		return ""
	}
	return line(name)
}

// dir is the workspace-relative folder of a scope's line ("" for the
// branch).
func (s *Store) lineDir(l line) string {
	if l == "" {
		return ""
	}
	return s.linesDir + "/" + string(l)
}

// lineRef is the ref a line moves: the branch HEAD names (branch), or
// refs/<Lines>/<name>.
func (s *Store) lineRef(l line, branch plumbing.ReferenceName) plumbing.ReferenceName {
	if l == "" {
		return branch
	}
	return plumbing.ReferenceName("refs/" + s.linesDir + "/" + string(l))
}

// lineOfRef is the line of a ref under refs/<Lines>/, false for any other.
func (s *Store) lineOfRef(name plumbing.ReferenceName) (line, bool) {
	rest, ok := strings.CutPrefix(string(name), "refs/"+s.linesDir+"/")
	if !ok || !s.linesOn() || !validName(rest) {
		return "", false
	}
	return line(rest), true
}

// lineRules are the tracking rules of a line: for the branch, every rule
// but the patterns under the lines folder; for a scope, those patterns,
// from their third segment on (the walk starts in the scope's folder).
func (s *Store) lineRules(l line) []rule {
	var out []rule
	for _, r := range s.rules {
		under := s.linesOn() && len(r) > 2 && r[0] == s.linesDir
		switch {
		case l == "" && !under:
			out = append(out, r)
		case l != "" && under && segMatch(r[1], string(l)):
			out = append(out, r)
		}
	}
	return out
}

// lineDepth is the depth a line's walk starts at: 0 at the root, 2 in a
// scope's folder.
func lineDepth(l line) int {
	if l == "" {
		return 0
	}
	return 2
}

// lineTree is the tree of line l's files in the commit tree root: the root
// itself for the branch, the scope's folder for a scope (zero when the
// tree has none).
func (s *Store) lineTree(l line, root plumbing.Hash) (plumbing.Hash, error) {
	if l == "" || root.IsZero() {
		return root, nil
	}
	h := root
	for _, name := range []string{s.linesDir, string(l)} {
		e, err := s.entry(h, name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if e == nil || e.Mode != filemode.Dir {
			return plumbing.ZeroHash, nil
		}
		h = e.Hash
	}
	return h, nil
}

// lineFiles are the tracked files of line l in the commit tree root that
// keep accepts (nil: all), with their versions.
func (s *Store) lineFiles(l line, root plumbing.Hash, keep func(string) bool) (map[string]blobState, error) {
	out := map[string]blobState{}
	h, err := s.lineTree(l, root)
	if err != nil || h.IsZero() {
		return out, err
	}
	prefix := s.lineDir(l)
	if prefix != "" {
		prefix += "/"
	}
	err = s.walkTree(h, prefix, lineDepth(l), s.lineRules(l), keep, out)
	return out, err
}

// holdsLines reports whether a commit tree of the branch holds the lines
// folder: a commit of an earlier version (or of one before the split),
// whose tree versions every scope.
func (s *Store) holdsLines(root plumbing.Hash) (bool, error) {
	if !s.linesOn() || root.IsZero() {
		return false, nil
	}
	t, err := s.tree(root)
	if err != nil {
		return false, err
	}
	e := findEntry(t.Entries, s.linesDir)
	return e != nil && e.Mode == filemode.Dir, nil
}

// lineAdmits reports whether keep (nil: all) accepts a file of line l:
// some path its rules name, with the scope's name in place of the
// folder's '*'. A rule with more wildcards is taken to admit it.
func (s *Store) lineAdmits(l line, keep func(string) bool) bool {
	if keep == nil {
		return true
	}
	for _, r := range s.lineRules(l) {
		segs := slices.Clone(r)
		if l != "" {
			segs[1] = string(l)
		}
		p := strings.Join(segs, "/")
		if strings.Contains(p, "*") || keep(p) {
			return true
		}
	}
	return false
}

// workingLines lists the scope folders in the workspace, sorted (names a
// line may have).
func (s *Store) workingLines() ([]line, error) {
	if !s.linesOn() || s.bare() {
		return nil, nil
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, filepath.FromSlash(s.linesDir)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.linesDir, err)
	}
	var out []line
	for _, e := range entries {
		if e.IsDir() && validName(e.Name()) {
			out = append(out, line(e.Name()))
		}
	}
	return out, nil
}

// tree reads a tree object. Trees are kept decoded (by id: an object
// never changes) up to decodedMax entries in all: a scope's commit reads
// the big folder tree of the branch that held every scope several times,
// and decoding 10,000 entries costs milliseconds. The caller holds s.mu
// and must not change the tree.
func (s *Store) tree(h plumbing.Hash) (*object.Tree, error) {
	if d, ok := s.decoded.trees[h]; ok {
		return d.Tree, nil
	}
	t, err := object.GetTree(s.obj(), h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", shortID(h.String()), err)
	}
	if s.decoded.entries+len(t.Entries) > decodedMax {
		s.decoded.trees, s.decoded.entries = nil, 0
	}
	if s.decoded.trees == nil {
		s.decoded.trees = map[plumbing.Hash]decodedTree{}
	}
	d := decodedTree{Tree: t}
	if len(t.Entries) > bigTree {
		d.byName = make(map[string]int, len(t.Entries))
		for i, e := range t.Entries {
			d.byName[e.Name] = i
		}
	}
	s.decoded.trees[h] = d
	s.decoded.entries += len(t.Entries) + 1
	return t, nil
}

// decodedTree is a tree kept decoded, with its entries by name when it
// has many (a folder of thousands of scopes).
type decodedTree struct {
	*object.Tree
	byName map[string]int
}

const bigTree = 64

// entry is the entry name of the tree h (nil: none), read through the
// decoded trees.
func (s *Store) entry(h plumbing.Hash, name string) (*object.TreeEntry, error) {
	t, err := s.tree(h)
	if err != nil {
		return nil, err
	}
	if d := s.decoded.trees[h]; d.byName != nil {
		if i, ok := d.byName[name]; ok {
			return &t.Entries[i], nil
		}
		return nil, nil
	}
	return findEntry(t.Entries, name), nil
}

// decodedMax bounds the tree entries kept decoded (about 100 bytes each).
const decodedMax = 200_000

// treeWithoutLines stores the tree root without the lines folder and with
// .gitignore as the workspace has it (that edit returned).
func (s *Store) treeWithoutLines(root plumbing.Hash) (plumbing.Hash, map[string]workFile, error) {
	t, err := s.tree(root)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	var entries []object.TreeEntry
	for _, e := range t.Entries {
		if e.Name != s.linesDir {
			entries = append(entries, e)
		}
	}
	ignore, err := s.readWorking(ignoreFile)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if s.bare() {
		// No workspace: the committed .gitignore with the lines it lacks.
		if ignore, err = s.committedIgnore(root); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	edits := map[string]workFile{}
	if ignore.exists {
		if err := s.storeObject(plumbing.BlobObject, ignore.data); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		edits[ignoreFile] = ignore
	}
	base, err := s.storeTree(entries)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	tree, _, err := s.editTree(base, edits)
	return tree, edits, err
}

// splitLines gives a repository whose branch holds the lines folder (an
// earlier version's) its lines: one commit on the branch takes the folder
// out of HEAD and records .gitignore as the workspace has it (ignoring
// the folder); each scope's line starts from that commit's parent when it
// is first committed. The caller holds s.mu.
func (s *Store) splitLines() error {
	if !s.linesOn() {
		return nil
	}
	// Looked at first without the writer lock: a lock a killed process
	// left must not keep a repository that needs no split from opening.
	h, err := s.head()
	if err != nil || h.commit == nil {
		return err
	}
	if holds, err := s.holdsLines(h.commit.TreeHash); err != nil || !holds {
		return err
	}
	return s.be.write(func() error {
		x, err := s.commits()
		if err != nil {
			return err
		}
		st, err := s.lineNow("", x)
		if err != nil || st.commit == nil {
			return err
		}
		holds, err := s.holdsLines(st.commit.TreeHash)
		if err != nil || !holds {
			return err
		}
		tree, edits, err := s.treeWithoutLines(st.commit.TreeHash)
		if err != nil {
			return err
		}
		msg, err := message(SplitSubject, "Each scope's memory now has a line of history of its own, refs/"+s.linesDir+"/<name>, "+
			"so that a scope's commit writes that scope's files alone. A scope's history before this commit is on this branch: "+
			"`git log refs/"+s.linesDir+"/<name>` goes on into it. The folder "+s.linesDir+"/ is no longer in HEAD, and .gitignore ignores it.")
		if err != nil {
			return err
		}
		last, err := s.lastCommitted(x)
		if err != nil {
			return err
		}
		c, err := s.commitTree(st, tree, msg, &last)
		if err != nil {
			return err
		}
		if err := s.be.setRefs([]refUpdate{{name: st.ref, new: plumbing.NewHashReference(st.ref, c.Hash), old: st.old}}); err != nil {
			return fmt.Errorf("move %s: %w", st.ref, err)
		}
		n := len(x.entries)
		s.indexCommit(x, c, "", st.commit.Hash, nil)
		if s.idx == x {
			s.appendIndex(x, x.entries[n:])
		}
		if err := s.writeIndex(edits); err != nil {
			s.log.Warn("memory repository: split made but the index was not updated", "err", err)
		}
		s.log.Info("memory repository: each scope's memory now has a line of history of its own",
			"commit", shortID(c.Hash.String()), "from", shortID(st.commit.Hash.String()))
		return nil
	})
}
