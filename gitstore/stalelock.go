package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StaleLock is a lock file ClearStaleLocks removed.
type StaleLock struct {
	// Name is the lock file's name inside the git directory ("index.lock").
	Name string
	// Age is how long ago it was last written.
	Age time.Duration
}

// ClearStaleLocks removes the repository's index.lock at once, whatever its
// age. Only a caller that knows no writer of ours can hold it may call it:
// Dream does, under its own cross-process lock, which every dreamgate
// writer of the repository holds. A lock found then was left by a killed
// process, and waiting for it to age (the Store's own rule, for callers
// that know nothing) would fail every Dream, restore and git command until
// it did. It returns what it removed; removing nothing is not an error.
func (s *Store) ClearStaleLocks() ([]StaleLock, error) {
	defer s.lock()()
	p := filepath.Join(s.gitDir, "index.lock")
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clear stale index.lock: %w", err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("clear stale index.lock: %w", err)
	}
	return []StaleLock{{Name: "index.lock", Age: max(0, time.Since(fi.ModTime()))}}, nil
}
