package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Root is an open workspace directory. All access goes through an os.Root
// opened on it, so no path reaches outside the directory even if a link
// appears there after Resolve looked.
//
// Root also carries the workspace's write lock. Everything in this process
// that rewrites a memory file takes it through Exclusive: the chat tools'
// and Dream's read-modify-write edits, Dream's snapshot and roll-back of a
// failed run, and a restore from the memory repository. Root's own file
// methods do not take the lock, so they can be used inside Exclusive.
type Root struct {
	dir  string
	root *os.Root
	// shared is the workspace's: a Root of a memory scope's folder (Scope)
	// takes the same write lock and refuses the same directories.
	shared *shared
}

// shared is what every Root of one workspace shares.
type shared struct {
	mu sync.Mutex // the write lock (Exclusive)

	fmu       sync.Mutex
	forbidden []string // directories Resolve refuses by identity (Forbid)
}

// Open opens dir, which must exist and be a directory. The caller closes
// the Root when it is no longer used.
func Open(dir string) (*Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Root{dir: dir, root: root, shared: &shared{}}, nil
}

// Dir is the directory the Root was opened on.
func (r *Root) Dir() string { return r.dir }

// Close releases the workspace directory.
func (r *Root) Close() error {
	if err := r.root.Close(); err != nil {
		return fmt.Errorf("close workspace: %w", err)
	}
	return nil
}

// Exclusive runs f holding the workspace's write lock: no other Exclusive
// of this Root, or of a Root Scope opened from it, runs meanwhile. f must
// not call Exclusive itself.
func (r *Root) Exclusive(f func() error) error {
	r.shared.mu.Lock()
	defer r.shared.mu.Unlock()
	return f()
}

// Lstat describes rel without following a final link.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) { return r.root.Lstat(rel) }

// Open opens rel for reading.
func (r *Root) Open(rel string) (*os.File, error) { return r.root.Open(rel) }

// ReadFile returns the content of rel.
func (r *Root) ReadFile(rel string) ([]byte, error) { return r.root.ReadFile(rel) }

// MkdirAll creates the directory rel and its missing parents.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error { return r.root.MkdirAll(rel, perm) }

// Remove deletes the file rel; a file that does not exist is not an error.
func (r *Root) Remove(rel string) error {
	if err := r.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// WriteFile replaces rel with data, atomically and durably, with exactly
// the permission bits perm, creating missing parent directories (see the
// package function WriteFile: this is the same write). It does not take
// the write lock; callers that read before they write hold Exclusive.
func (r *Root) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	return writeIn(r.root, rel, data, perm)
}
