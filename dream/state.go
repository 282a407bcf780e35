package dream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// statePath is Dream's own bookkeeping, beside the cursors. It is not
// tracked by the memory repository (gitstore ignores everything under
// memory/ but MEMORY.md).
func statePath(workspace string) string {
	return filepath.Join(workspace, "memory", ".dream_state")
}

// state is the content of memory/.dream_state. It survives restarts and is
// shared by every process using the workspace (they are serialised by the
// Dream lock).
type state struct {
	// Failures counts failed runs on the batch that starts after the
	// current Dream cursor; nil when the last run succeeded.
	Failures *batchFailures `json:"failures,omitempty"`
	// LastRun describes the most recent finished run.
	LastRun *LastRun `json:"last_run,omitempty"`
}

// batchFailures identifies a batch by its first cursor: the cursor does not
// move while it fails, so every retry starts at the same entry even when
// the batch grows with new entries. Last is the end of the shortest
// attempt: the entries every failed attempt read.
type batchFailures struct {
	First  int    `json:"first"`
	Last   int    `json:"last"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// LastRun is the outcome of the most recent finished Dream in this
// workspace, in any process.
type LastRun struct {
	When     time.Time     `json:"when"`
	Trigger  string        `json:"trigger"`
	Outcome  Outcome       `json:"outcome"`
	Entries  int           `json:"entries"`
	First    int           `json:"first,omitempty"`
	Last     int           `json:"last,omitempty"`
	Changes  int           `json:"changes,omitempty"`
	Commit   string        `json:"commit,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration"`
}

// loadState reads the state file. A missing file is the zero state; a
// corrupt one is reported so the caller can log it and start afresh (the
// worst case is a failure count starting again).
func loadState(workspace string) (state, error) {
	var st state
	b, err := os.ReadFile(statePath(workspace))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read dream state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("decode dream state: %w", err)
	}
	return st, nil
}

// saveState writes the state file atomically.
func saveState(workspace string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode dream state: %w", err)
	}
	if err := writeAtomic(statePath(workspace), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write dream state: %w", err)
	}
	return nil
}

// writeAtomic replaces p with data: a temp file in the same directory,
// fsync, rename, fsync of the directory. A crash leaves the old or the new
// content, never a torn file.
func writeAtomic(p string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, p); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: not every file system syncs directories
		_ = d.Close()
	}
	return nil
}
