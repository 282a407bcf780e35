package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Restore puts the tracked files back to their state just before rev (the
// tree of rev's first parent) and records that as a new commit
// "revert: undo <short id>". It is a snapshot restore, not an inverse
// patch: every tracked file gets its content from that tree, and a tracked
// file that did not exist then is deleted.
//
// Nothing is lost on the way. History is never rewritten. Edits of tracked
// files not yet committed are first committed as ManualSubject (they are
// then among the undone commits, recoverable from that commit). Files the
// repository does not track are never touched.
//
// undone lists, newest first, every commit after rev on the first-parent
// history (including that manual commit) that changed at least one tracked
// file the restore changes: its change to that file is discarded too. Commits
// after rev that touched only files the restore leaves alone are not listed.
//
// rev resolves as in Show; it must be on the first-parent history of HEAD
// (ErrNotInHistory). A root commit has no earlier state: ErrRootCommit. When
// the files already are in that state, ErrNothingToCommit and no revert
// commit (the manual commit, if one was needed, stays).
func (s *Store) Restore(rev string) (restore Commit, undone []Commit, err error) {
	defer s.lock()()
	restore, undone, err = s.restore(rev)
	if err != nil {
		return Commit{}, nil, fmt.Errorf("restore %s: %w", strings.TrimSpace(rev), err)
	}
	return restore, undone, nil
}

func (s *Store) restore(rev string) (Commit, []Commit, error) {
	target, err := s.resolve(rev)
	if err != nil {
		return Commit{}, nil, err
	}
	short := shortID(target.Hash.String())
	if len(target.ParentHashes) == 0 {
		return Commit{}, nil, ErrRootCommit
	}
	// One lock from the history walk to the revert commit: no other writer
	// may slip a commit in whose change the restore would then discard
	// without naming it.
	lock, err := s.lockIndex()
	if err != nil {
		return Commit{}, nil, err
	}
	defer lock.release()
	later, err := s.commitsAfter(target)
	if err != nil {
		return Commit{}, nil, err
	}
	// Save hand edits first, so the restore cannot silently discard them.
	manual, err := s.saveManualEdits()
	if err != nil {
		return Commit{}, nil, err
	}
	if manual != nil {
		later = append([]*object.Commit{manual}, later...)
	}
	before, err := object.GetCommit(s.repo.Storer, target.ParentHashes[0])
	if err != nil {
		return Commit{}, nil, fmt.Errorf("read parent of %s: %w", short, err)
	}
	head, err := s.head()
	if err != nil {
		return Commit{}, nil, err
	}

	type fileRestore struct {
		path      string
		want, now blobState
	}
	var restores []fileRestore
	for _, p := range s.tracked {
		want, err := s.lookup(before.TreeHash, p)
		if err != nil {
			return Commit{}, nil, err
		}
		now, err := s.lookup(head.treeHash(), p)
		if err != nil {
			return Commit{}, nil, err
		}
		if want != now {
			restores = append(restores, fileRestore{p, want, now})
		}
	}
	if len(restores) == 0 {
		return Commit{}, nil, fmt.Errorf("the memory files already are as before %s: %w", short, ErrNothingToCommit)
	}

	// Until the revert commit exists, a failure puts the files back as HEAD
	// has them (all of it is committed by now, hand edits included), so a
	// half-done restore is never mistaken later for edits made by hand.
	done := false
	var written []fileRestore
	defer func() {
		if done {
			return
		}
		for _, r := range written {
			if err := s.writeVersion(r.path, r.now); err != nil {
				s.log.Error("memory repository: could not undo a failed restore", "path", r.path, "err", err)
			}
		}
	}()
	changed := make([]string, 0, len(restores))
	var lines []string
	for _, r := range restores {
		written = append(written, r)
		if err := s.writeVersion(r.path, r.want); err != nil {
			return Commit{}, nil, err
		}
		changed = append(changed, r.path)
		if r.want.exists {
			lines = append(lines, "- "+r.path+": restored")
		} else {
			lines = append(lines, "- "+r.path+": deleted (it did not exist before "+short+")")
		}
	}
	undone, err := s.touching(later, target, changed)
	if err != nil {
		return Commit{}, nil, err
	}

	d, err := s.status()
	if err != nil {
		return Commit{}, nil, err
	}
	body := fmt.Sprintf("Restored the memory files to their state before %s (%s).\n\n%s\n",
		short, toCommit(target).Subject, strings.Join(lines, "\n"))
	if len(undone) > 0 {
		body += "\nThis also undoes later commits:\n"
		for _, c := range undone {
			body += "- " + c.Short + " " + c.Subject + "\n"
		}
	}
	if sum := s.Summary(d, 0); sum != "" {
		body += "\n" + sum
	}
	c, err := s.commitPaths(s.tracked, RevertPrefix+short, body)
	if err != nil {
		return Commit{}, nil, fmt.Errorf("commit the restore: %w", err)
	}
	done = true
	return c, undone, nil
}

// saveManualEdits commits uncommitted changes of the tracked files (byte for
// byte: even a change of line endings only is kept) as ManualSubject, and
// returns that commit, or nil when there was nothing to save. The caller
// holds the index lock.
func (s *Store) saveManualEdits() (*object.Commit, error) {
	d, err := s.status()
	if err != nil {
		return nil, err
	}
	body := s.Summary(d, 0)
	if body == "" {
		body = "Only line endings or file modes changed."
	}
	c, err := s.commitPaths(s.tracked, ManualSubject, body)
	if errors.Is(err, ErrNothingToCommit) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("save edits made outside Dream: %w", err)
	}
	obj, err := object.GetCommit(s.repo.Storer, plumbing.NewHash(c.SHA))
	if err != nil {
		return nil, fmt.Errorf("read back %s: %w", c.Short, err)
	}
	return obj, nil
}

// commitsAfter returns the commits from HEAD back to target (excluding it)
// on the first-parent chain, newest first.
func (s *Store) commitsAfter(target *object.Commit) ([]*object.Commit, error) {
	var later []*object.Commit
	found := false
	err := s.walk(func(c *object.Commit) (bool, error) {
		if c.Hash == target.Hash {
			found = true
			return false, nil
		}
		later = append(later, c)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s: %w", shortID(target.Hash.String()), ErrNotInHistory)
	}
	return later, nil
}

// touching keeps the commits of later (newest first, each the child of the
// next, the last one the child of target) that changed any of paths. It
// walks oldest first so each tree is looked into once.
func (s *Store) touching(later []*object.Commit, target *object.Commit, paths []string) ([]Commit, error) {
	stateAt := func(tree plumbing.Hash) ([]blobState, error) {
		st := make([]blobState, len(paths))
		for i, p := range paths {
			var err error
			if st[i], err = s.lookup(tree, p); err != nil {
				return nil, err
			}
		}
		return st, nil
	}
	prevTree := target.TreeHash
	prev, err := stateAt(prevTree)
	if err != nil {
		return nil, err
	}
	var out []Commit
	for i := len(later) - 1; i >= 0; i-- {
		c := later[i]
		if c.TreeHash == prevTree {
			continue
		}
		cur, err := stateAt(c.TreeHash)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(cur, prev) {
			out = append(out, toCommit(c))
		}
		prevTree, prev = c.TreeHash, cur
	}
	slices.Reverse(out)
	return out, nil
}

// writeVersion makes the workspace file at p the given committed version
// (atomically, through the Store's Files), or removes it when that version
// does not exist. A symbolic link is recreated directly: Files writes
// regular files only.
func (s *Store) writeVersion(p string, v blobState) error {
	full := filepath.Join(s.dir, filepath.FromSlash(p))
	if !v.exists {
		if err := s.files.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		return nil
	}
	data, err := s.readBlob(v.hash)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	switch v.mode {
	case filemode.Symlink:
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		if err := os.Symlink(filepath.FromSlash(string(data)), full); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		return nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		perm := fs.FileMode(0o644)
		if v.mode == filemode.Executable {
			perm = 0o755
		}
		if err := s.files.WriteFile(p, data, perm); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		return nil
	default:
		return fmt.Errorf("restore %s: unsupported file mode %o", p, uint32(v.mode))
	}
}
