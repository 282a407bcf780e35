package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/workspace"
	"github.com/gofrs/flock"
)

// ReplyHandles keep the platforms' handles for answering a command a
// person ran — a Slack slash command's response_url, a Discord
// interaction's token — from the command's acceptance until the handle
// expires, so that its answer goes through the handle whichever process
// sends it, also after a restart: a slash command accepted before a
// restart is answered after it, where it was typed, as a message is. A
// handle is the adapter's own record (opaque bytes here); its uses are
// counted here, once across every process, for the platform's limits
// (Slack accepts a response_url five times).
type ReplyHandles interface {
	// Keep keeps handle under key until expires, replacing one kept
	// there (and its uses).
	Keep(key string, handle []byte, expires time.Time) error
	// Handle returns the handle kept under key and how often it was
	// used; ok is false when none is kept, or it expired by now.
	Handle(key string, now time.Time) (handle []byte, uses int, ok bool, err error)
	// Use books one use of the handle under key when it was used fewer
	// than limit times and has not expired by now; ok says it did.
	Use(key string, limit int, now time.Time) (ok bool, err error)
}

// ReplyHandlesFile is the embedded engine's ReplyHandles: one small JSON
// file in the state directory, read and rewritten whole (the one atomic
// write) under a file lock at each change, so the processes sharing a
// state directory (a bot's Discord shards) share it. It holds the
// commands accepted in the last half hour or so, each dropped once
// expired.
type ReplyHandlesFile struct {
	path string
	lock *flock.Flock
	mu   sync.Mutex
}

var _ ReplyHandles = (*ReplyHandlesFile)(nil)

// OpenReplyHandlesFile returns the handles kept in the file at path
// (created with the first one kept; owner-only). It touches no file.
func OpenReplyHandlesFile(path string) *ReplyHandlesFile {
	return &ReplyHandlesFile{path: path, lock: flock.New(path+".lock", flock.SetPermissions(0o600))}
}

type handleRecord struct {
	Handle  []byte    `json:"handle"`
	Expires time.Time `json:"expires"`
	Uses    int       `json:"uses,omitempty"`
}

// change runs fn on the records under the lock and writes them back when
// fn says they changed, without those expired (by the clock: a caller's
// now decides what it finds, never what is forgotten).
func (f *ReplyHandlesFile) change(fn func(map[string]*handleRecord) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("reply handles: %w", err)
	}
	if err := f.lock.Lock(); err != nil {
		return fmt.Errorf("reply handles: lock: %w", err)
	}
	defer func() { _ = f.lock.Unlock() }()
	recs, err := f.read()
	if err != nil {
		return err
	}
	dropped := false
	now := time.Now()
	for k, r := range recs {
		if !now.Before(r.Expires) {
			delete(recs, k)
			dropped = true
		}
	}
	if !fn(recs) && !dropped {
		return nil
	}
	data, err := json.Marshal(recs)
	if err != nil {
		return fmt.Errorf("reply handles: %w", err)
	}
	if err := workspace.WriteFile(f.path, data, 0o600); err != nil {
		return fmt.Errorf("reply handles: %w", err)
	}
	return nil
}

// read reads the records; a missing file holds none, and one that does
// not parse (written by hand) is an error rather than a silent loss.
func (f *ReplyHandlesFile) read() (map[string]*handleRecord, error) {
	recs := map[string]*handleRecord{}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return recs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reply handles: %w", err)
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("reply handles: %s does not parse: %w", filepath.Base(f.path), err)
	}
	return recs, nil
}

// Keep implements ReplyHandles.
func (f *ReplyHandlesFile) Keep(key string, handle []byte, expires time.Time) error {
	return f.change(func(recs map[string]*handleRecord) bool {
		recs[key] = &handleRecord{Handle: handle, Expires: expires}
		return true
	})
}

// Handle implements ReplyHandles.
func (f *ReplyHandlesFile) Handle(key string, now time.Time) ([]byte, int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.lock.RLock(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, false, nil // no directory yet: nothing kept
		}
		return nil, 0, false, fmt.Errorf("reply handles: lock: %w", err)
	}
	defer func() { _ = f.lock.Unlock() }()
	recs, err := f.read()
	if err != nil {
		return nil, 0, false, err
	}
	r, ok := recs[key]
	if !ok || !now.Before(r.Expires) {
		return nil, 0, false, nil
	}
	return r.Handle, r.Uses, true, nil
}

// Use implements ReplyHandles.
func (f *ReplyHandlesFile) Use(key string, limit int, now time.Time) (bool, error) {
	used := false
	err := f.change(func(recs map[string]*handleRecord) bool {
		r, ok := recs[key]
		if !ok || !now.Before(r.Expires) || r.Uses >= limit {
			return false
		}
		r.Uses++
		used = true
		return true
	})
	return used, err
}
