package gitstore

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// The git index (<gitdir>/index) and its lock. Our own reads never use
// the index; it is kept for the git command line, so that `git status`
// agrees with the commits the Store made.

// Lock handling. git takes <gitdir>/index.lock (created exclusively) before
// it writes the index or moves a branch; taking it too keeps us from
// interleaving with a git command or another dreamgate process. We hold it
// for a whole operation (a restore makes two commits) and write the index
// itself through a temporary file and a rename, so it is never torn.
const (
	defaultLockWait = 2 * time.Second  // a git command holds the lock for milliseconds
	lockStale       = 10 * time.Minute // our writes take milliseconds: an older lock is a crash leftover
)

type indexLock struct {
	path string
}

func (s *Store) lockIndex() (*indexLock, error) {
	p := filepath.Join(s.gitDir, "index.lock")
	f, err := s.takeLock(p)
	if err != nil {
		return nil, fmt.Errorf("lock index: %w", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(p)
		return nil, fmt.Errorf("lock index: %w", err)
	}
	return &indexLock{path: p}, nil
}

func (l *indexLock) release() { _ = os.Remove(l.path) }

// writeIndex sets the index entries of the committed paths to what was
// committed (with the files' stat data, so git sees them clean without
// rehashing) and replaces the index atomically. The caller holds the lock.
// The index is HEAD's: files of the scopes' lines are never in it (an
// earlier version's entries of them are dropped), the git command line
// ignores their folder.
func (s *Store) writeIndex(files map[string]workFile) (err error) {
	if s.bare() {
		return nil
	}
	if s.linesOn() {
		branch := map[string]workFile{}
		for p, w := range files {
			if s.lineOf(p) == "" {
				branch[p] = w
			}
		}
		if len(branch) == 0 {
			return nil
		}
		files = branch
	}
	idx, err := s.obj().Index()
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	if idx.Version == 0 {
		idx.Version = 2
	}
	idx.Cache = nil // the cached tree ids would be stale; git rebuilds them
	idx.ResolveUndo = nil
	if s.linesOn() {
		idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool { return s.lineOf(e.Name) != "" })
	}
	for p, w := range files {
		idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool { return e.Name == p })
		if !w.exists {
			continue
		}
		e := &index.Entry{Name: p, Hash: w.hash, Mode: w.mode}
		if w.info != nil {
			// Without the file's stat data (a version committed before
			// the file is written) git rehashes the file to compare.
			e.Size, e.ModifiedAt = uint32(w.info.Size()), w.info.ModTime()
			fillStat(e, w.info)
		}
		idx.Entries = append(idx.Entries, e)
	}
	f, err := os.CreateTemp(s.gitDir, "index.dreamgate-*")
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err := index.NewEncoder(bw).Encode(idx); err != nil {
		return fmt.Errorf("encode index: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close index: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(s.gitDir, "index")); err != nil {
		return fmt.Errorf("install index: %w", err)
	}
	return nil
}
