package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// StaleLock is a lock file ClearStaleLocks removed.
type StaleLock struct {
	// Name is the lock file's name inside the git directory ("index.lock",
	// "HEAD.lock", "refs/heads/main.lock").
	Name string
	// Age is how long ago it was last written.
	Age time.Duration
}

// ClearStaleLocks removes the repository's index.lock and the lock files of
// HEAD and its branch at once, whatever their age. Only a caller that knows
// no writer of ours can hold them may call it: Dream does, under its own
// cross-process lock, which every dreamgate writer of the repository holds.
// A lock found then was left by a killed process (a kill between a ref's
// lock file and its rename leaves <ref>.lock), and waiting for it to age
// (the Store's own rule, for callers that know nothing) would fail every
// Dream, restore and git command until it did. It returns what it removed;
// removing nothing is not an error.
func (s *Store) ClearStaleLocks() ([]StaleLock, error) {
	defer s.lock()()
	if s.bare() {
		return nil, nil // a database's locks end with their transactions
	}
	locks := []struct{ name, path string }{
		{"index.lock", filepath.Join(s.gitDir, "index.lock")},
		{"HEAD.lock", s.refPath(plumbing.HEAD) + ".lock"},
	}
	if ref, err := s.readRef(plumbing.HEAD); err == nil && ref.Type() == plumbing.SymbolicReference && checkRefName(ref.Target()) == nil {
		locks = append(locks, struct{ name, path string }{ref.Target().String() + ".lock", s.refPath(ref.Target()) + ".lock"})
	}
	if s.linesOn() {
		// The lines' refs: a kill between a line's lock file and its
		// rename leaves one.
		dir := filepath.Join(s.commonDir, "refs", s.linesDir)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".lock") {
				locks = append(locks, struct{ name, path string }{"refs/" + s.linesDir + "/" + e.Name(), filepath.Join(dir, e.Name())})
			}
		}
	}
	var removed []StaleLock
	for _, l := range locks {
		fi, err := os.Lstat(l.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("clear stale %s: %w", l.name, err)
		}
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("clear stale %s: %w", l.name, err)
		}
		removed = append(removed, StaleLock{Name: l.name, Age: max(0, time.Since(fi.ModTime()))})
	}
	return removed, nil
}
