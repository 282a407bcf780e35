package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// A step of memory is committed before its files are written: the caller
// builds the new files, CommitChanges makes a commit of them on top of
// HEAD and moves the branch there (the one moment the step happens), and
// Checkout then writes them into the workspace. A process killed before
// the branch moved changed nothing; one killed after it left a commit
// whose files Checkout writes at the next start, from the commit.

// PointCheckout names the moment after Checkout wrote one file
// (Options.AfterWrite): a step killed between two of its files.
const PointCheckout = "gitstore-checkout"

// Change is one file of a commit CommitChanges builds: its new content, or
// its removal.
type Change struct {
	// Path is workspace-relative and slash-separated; it must be tracked.
	Path   string
	Data   []byte
	Remove bool
}

// CommitChanges makes a commit whose tree is HEAD's with the changes
// applied, with the given subject and body, and moves the branch to it. It
// reads and writes no workspace file: a step's files are written after its
// commit (Checkout). parent, when not "", is the full id the caller built
// the changes on: when HEAD names another commit the step was built on a
// state that is gone, and ErrConcurrentUpdate is returned with no commit.
// Changes that leave every file as HEAD has it are ErrNothingToCommit; a
// path the store does not track is ErrNotTracked.
//
// The git index is set to the committed files (without their stat data,
// so that git compares their content with the workspace's until they are
// written).
func (s *Store) CommitChanges(parent string, changes []Change, subject, body string) (Commit, error) {
	defer s.lock()()
	c, err := s.commitChanges(parent, changes, subject, body, nil)
	if err != nil {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, err)
	}
	return c, nil
}

// commitChanges is CommitChanges; with, when set, runs in the commit's
// write once the branch moved (a database's transaction: its error rolls
// the commit back).
func (s *Store) commitChanges(parent string, changes []Change, subject, body string, with func(Commit, DBTx) error) (Commit, error) {
	msg, err := message(subject, body)
	if err != nil {
		return Commit{}, err
	}
	var out Commit
	err = s.be.write(func() error {
		x, err := s.commits()
		if err != nil {
			return err
		}
		if head := x.head(); parent != "" && (head.IsZero() || head.String() != parent) {
			return fmt.Errorf("the branch moved from %s: %w", shortID(parent), ErrConcurrentUpdate)
		}
		edits := map[string]workFile{}
		for _, ch := range changes {
			if !s.tracks(ch.Path) {
				return fmt.Errorf("%q: %w", ch.Path, ErrNotTracked)
			}
			had, err := s.fileAt(x, len(x.entries)-1, ch.Path)
			if err != nil {
				return err
			}
			w := workFile{}
			if !ch.Remove {
				mode := filemode.Regular
				if had.exists && had.mode == filemode.Executable {
					mode = had.mode
				}
				w = workFile{blobState: blobState{exists: true, mode: mode,
					hash: plumbing.ComputeHash(plumbing.BlobObject, ch.Data)}, data: ch.Data}
			}
			if had != w.blobState {
				edits[ch.Path] = w
			} else {
				delete(edits, ch.Path)
			}
		}
		if len(edits) == 0 {
			return ErrNothingToCommit
		}
		made, err := s.commitEdits(edits, msg)
		if err != nil {
			return err
		}
		c := made[len(made)-1].commit
		if err := s.writeIndex(edits); err != nil {
			s.log.Warn("memory repository: commit made but the index was not updated",
				"commit", shortID(c.Hash.String()), "err", err)
		}
		out = toCommit(c)
		if with != nil {
			return with(out, s.be.(*dbBackend).cur.tx)
		}
		return nil
	})
	return out, err
}

// fileAt is the version of the tracked file p as its line stood at the
// commit at position p of x.
func (s *Store) fileAt(x *commitIndex, pos int, p string) (blobState, error) {
	root, err := s.rootAt(x, s.lineOf(p), pos)
	if err != nil {
		return blobState{}, err
	}
	return s.lookup(root, p)
}

// DiffChanges is the diff a commit of the changes on top of base (a full
// id or a unique prefix) would show: base's version of each file against
// its new content, in path order, exactly (line endings count, as in a
// commit). Changes that leave a file as base has it are not in it. A step
// renders its commit body from it before it commits.
func (s *Store) DiffChanges(base string, changes []Change) (Diff, error) {
	defer s.lock()()
	c, err := s.resolve(base)
	if err != nil {
		return Diff{}, fmt.Errorf("diff changes on %s: %w", base, err)
	}
	sorted := slices.Clone(changes)
	slices.SortFunc(sorted, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	var out Diff
	var sb strings.Builder
	for _, ch := range sorted {
		had, err := s.lookup(c.TreeHash, ch.Path)
		if err != nil {
			return Diff{}, err
		}
		from := side{blobState: had}
		if from.data, err = s.content(had); err != nil {
			return Diff{}, err
		}
		to := side{}
		if !ch.Remove {
			to = side{blobState: blobState{exists: true, mode: filemode.Regular,
				hash: plumbing.ComputeHash(plumbing.BlobObject, ch.Data)}, data: ch.Data}
			if had.exists && had.mode == filemode.Executable {
				to.mode = had.mode
			}
		}
		if from.blobState == to.blobState {
			continue
		}
		if fc, ok := fileDiff(&sb, ch.Path, from, to, false); ok {
			out.Files = append(out.Files, fc)
		}
	}
	out.Unified = sb.String()
	return out, nil
}

// Head is the newest commit of the repository, on any line
// (ErrNoMatchingCommit in a repository without one, which Open never
// leaves): what a step builds on.
func (s *Store) Head() (Commit, error) {
	defer s.lock()()
	x, err := s.commits()
	if err != nil {
		return Commit{}, fmt.Errorf("read HEAD: %w", err)
	}
	if len(x.entries) == 0 {
		return Commit{}, fmt.Errorf("read HEAD: %w", ErrNoMatchingCommit)
	}
	c, err := s.indexedCommit(x.entries[len(x.entries)-1])
	if err != nil {
		return Commit{}, fmt.Errorf("read HEAD: %w", err)
	}
	return toCommit(c), nil
}

// FileAt is the content of the tracked file path as the commit rev (a full
// id or a unique prefix) holds it: as path's line stood when rev was made,
// whichever line rev is on. ok is false when it holds none.
func (s *Store) FileAt(rev, path string) (data []byte, ok bool, err error) {
	defer s.lock()()
	c, err := s.resolve(rev)
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", path, rev, err)
	}
	x, err := s.commits()
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", path, rev, err)
	}
	var b blobState
	if i, in := x.pos[c.Hash]; in {
		b, err = s.fileAt(x, i, path)
	} else {
		b, err = s.lookup(c.TreeHash, path)
	}
	if err != nil || !b.exists {
		return nil, false, err
	}
	data, err = s.readBlob(b.hash)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// CommitsAfter lists the commits after base on the first-parent history
// of HEAD, oldest first, with their bodies (which it reads: keep the range
// short). An empty list when base is HEAD; ErrNotInHistory when base is not
// on that history. At most max are read (0: all); when there are more, the
// newest max are returned.
func (s *Store) CommitsAfter(base string, max int) ([]Commit, error) {
	defer s.lock()()
	h, ok := parseHash(strings.TrimSpace(base))
	if !ok {
		return nil, fmt.Errorf("commits after %q: %w", base, ErrInvalidRevision)
	}
	for rebuilt := false; ; rebuilt = true {
		out, err := s.commitsAfterHash(h, max)
		if errors.Is(err, errIndexStale) && !rebuilt {
			s.forgetIndex(err.Error())
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("commits after %s: %w", shortID(base), err)
		}
		return out, nil
	}
}

func (s *Store) commitsAfterHash(h plumbing.Hash, max int) ([]Commit, error) {
	x, err := s.commits()
	if err != nil {
		return nil, err
	}
	i, found := x.pos[h]
	if !found {
		return nil, ErrNotInHistory
	}
	later := x.entries[i+1:]
	if max > 0 && len(later) > max {
		later = later[len(later)-max:]
	}
	out := make([]Commit, 0, len(later))
	for _, e := range later {
		c, err := s.indexedCommit(e)
		if err != nil {
			return nil, err
		}
		out = append(out, toCommit(c))
	}
	return out, nil
}

// CheckoutResult is what Checkout did.
type CheckoutResult struct {
	// Written are the files it wrote or removed, in path order.
	Written []string
	// Kept are the files it left alone because the workspace held neither
	// from's version nor to's: an edit made since from, which is not the
	// step's to overwrite.
	Kept []string
}

// Checkout makes the workspace's files hold what the commit to holds,
// where they still hold what the commit from held: every tracked file keep
// accepts (nil: all) that differs between the two trees is written (or
// removed) when the workspace's file is from's version, left alone when it
// is to's already, and listed in Kept when it is anything else. A file is
// written atomically through the Store's Files, keeping its permission
// bits (a new one is owner-only); a symbolic link in the workspace is
// never from's version and never followed. It is what makes a step's files
// follow its commit, also at the next start when a process died between
// the two.
func (s *Store) Checkout(from, to string, keep func(string) bool) (CheckoutResult, error) {
	defer s.lock()()
	res, err := s.checkout(from, to, keep)
	if err != nil {
		return res, fmt.Errorf("checkout %s: %w", shortID(to), err)
	}
	return res, nil
}

func (s *Store) checkout(from, to string, keep func(string) bool) (CheckoutResult, error) {
	var res CheckoutResult
	if s.bare() {
		return res, nil // no workspace: the files are read from the commits
	}
	olds, news, err := s.checkoutFiles(from, to, keep)
	if err != nil {
		return res, err
	}
	paths := make([]string, 0, len(news))
	for p, n := range news {
		if olds[p] != n {
			paths = append(paths, p)
		}
	}
	for p := range olds {
		if _, ok := news[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	err = s.be.write(func() error {
		written := map[string]workFile{}
		for _, p := range paths {
			w, err := s.readWorking(p)
			if err != nil {
				return err
			}
			switch {
			case sameVersion(w.blobState, news[p]):
				continue
			case !sameVersion(w.blobState, olds[p]):
				res.Kept = append(res.Kept, p)
				continue
			}
			if err := s.writeCheckout(p, news[p], w); err != nil {
				return err
			}
			res.Written = append(res.Written, p)
			s.hook(PointCheckout)
			if w, err = s.readWorking(p); err == nil {
				written[p] = w
			}
		}
		if len(written) > 0 {
			// The files now match the commit: with their stat data, git
			// need not rehash them.
			if err := s.writeIndex(written); err != nil {
				s.log.Warn("memory repository: files written but the index was not updated", "err", err)
			}
		}
		return nil
	})
	return res, err
}

// checkoutFiles are the tracked files keep accepts as the commits from and
// to have them: of the lines that changed between the two, as each stood
// at either (both on the history), or the two commits' own trees.
func (s *Store) checkoutFiles(from, to string, keep func(string) bool) (olds, news map[string]blobState, err error) {
	a, err := s.resolve(from)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.resolve(to)
	if err != nil {
		return nil, nil, err
	}
	x, err := s.commits()
	if err != nil {
		return nil, nil, err
	}
	ia, okA := x.pos[a.Hash]
	ib, okB := x.pos[b.Hash]
	if !okA || !okB {
		if olds, err = s.treeFiles(a.TreeHash, keep); err != nil {
			return nil, nil, err
		}
		news, err = s.treeFiles(b.TreeHash, keep)
		return olds, news, err
	}
	lines, err := s.linesBetween(x, min(ia, ib), max(ia, ib), keep)
	if err != nil {
		return nil, nil, err
	}
	if olds, err = s.filesAt(x, ia, lines, keep); err != nil {
		return nil, nil, err
	}
	news, err = s.filesAt(x, ib, lines, keep)
	return olds, news, err
}

// linesBetween are the lines keep admits that have a commit after
// position i up to j: a commit of the branch that held every scope counts
// for every line.
func (s *Store) linesBetween(x *commitIndex, i, j int, keep func(string) bool) ([]line, error) {
	seen := map[line]bool{}
	for _, e := range x.entries[i+1 : j+1] {
		if e.line == "" && e.holds {
			return s.linesFor(x, keep)
		}
		if s.lineAdmits(e.line, keep) {
			seen[e.line] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// sameVersion reports whether a workspace file is a committed version: the
// same bytes, both regular files (a link is never the version of a file),
// or both missing.
func sameVersion(work, committed blobState) bool {
	if !work.exists || !committed.exists {
		return work.exists == committed.exists
	}
	isLink := func(m filemode.FileMode) bool { return m == filemode.Symlink }
	return work.hash == committed.hash && !isLink(work.mode) && !isLink(committed.mode)
}

// writeCheckout writes the version v of p over the workspace's file now,
// keeping its permission bits, or removes it.
func (s *Store) writeCheckout(p string, v blobState, now workFile) error {
	if !v.exists {
		if err := s.files.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		return nil
	}
	if v.mode == filemode.Symlink {
		return fmt.Errorf("write %s: a committed symbolic link is not written into the workspace", p)
	}
	data, err := s.readBlob(v.hash)
	if err != nil {
		return err
	}
	perm := fs.FileMode(0o600)
	if now.exists && now.info != nil {
		perm = now.info.Mode().Perm()
	}
	if err := s.files.WriteFile(p, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// LineHead is the newest commit holding the files of the folder dir (""
// the workspace root's; "scopes/<name>" a scope's, on its line): its full
// id and when it was committed, which no other commit of the repository
// shares. "" when there is none. A reader keeps what it read of a line by
// this id, so it reads a file again only when the line moved.
func (s *Store) LineHead(dir string) (string, time.Time, error) {
	defer s.lock()()
	x, err := s.commits()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read the line of %q: %w", dir, err)
	}
	l := line("")
	if dir != "" {
		l = s.lineOf(dir + "/x")
		if l == "" {
			return "", time.Time{}, fmt.Errorf("%q is no folder with a line of its own", dir)
		}
	}
	i := x.at(l, len(x.entries)-1)
	if i < 0 {
		return "", time.Time{}, nil
	}
	c, err := s.indexedCommit(x.entries[i])
	if err != nil {
		return "", time.Time{}, err
	}
	return c.Hash.String(), c.Committer.When, nil
}

// LineDirs lists the folders that have a line of their own ("scopes/<name>"),
// sorted: every scope the repository holds files of.
func (s *Store) LineDirs() ([]string, error) {
	defer s.lock()()
	x, err := s.commits()
	if err != nil {
		return nil, fmt.Errorf("list the lines: %w", err)
	}
	lines, err := s.linesFor(x, nil)
	if err != nil {
		return nil, fmt.Errorf("list the lines: %w", err)
	}
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, s.lineDir(l))
		}
	}
	return out, nil
}
