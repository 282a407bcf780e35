package dream

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
	"github.com/gofrs/flock"
)

// lockPath is the file that makes Dream single-flight across processes. It
// lives under memory/, which the memory repository ignores and the chat
// file tools may not write (*.lock).
func lockPath(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(workspace.DreamLock))
}

// flight is the single-flight guard: an in-process flag (cheap, and it
// carries the start time) and an advisory file lock for other processes
// (a `dreamgate dream run` beside the gateway). Neither ever waits: a second
// request is refused at once with a *BusyError.
type flight struct {
	path string
	// held, when set, runs once both locks are taken, before the caller
	// goes on: the moment to clean up after a holder that died.
	held func()
	// st, when set, holds the lock across processes instead of the file
	// (the store's PostgreSQL engine).
	st store.DreamLedger

	mu      sync.Mutex
	running bool
	since   time.Time
}

// acquire takes both locks or neither. The returned release must be called
// exactly once.
func (f *flight) acquire(now time.Time) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		return nil, &BusyError{Since: f.since}
	}
	unlock, err := f.acquireAcross(now)
	if err != nil {
		return nil, err
	}
	f.running, f.since = true, now
	if f.held != nil {
		f.held()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlock()
			f.mu.Lock()
			f.running, f.since = false, time.Time{}
			f.mu.Unlock()
		})
	}, nil
}

// acquireAcross takes the lock other processes see: the file's flock, or
// the database's. The caller holds f.mu.
func (f *flight) acquireAcross(now time.Time) (unlock func(), err error) {
	if f.st != nil {
		release, ok, since, err := f.st.TryDream(now)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &BusyError{Since: since, Elsewhere: true}
		}
		return release, nil
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return nil, fmt.Errorf("dream lock: %w", err)
	}
	fl := flock.New(f.path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("dream lock: %w", err)
	}
	if !ok {
		return nil, &BusyError{Since: readLockTime(f.path), Elsewhere: true}
	}
	// The start time is for the processes we refuse; the lock itself is
	// the flock, so a failed write only costs them the "started …" detail.
	_ = os.WriteFile(f.path, []byte(formatLockTime(now)), 0o600)
	return func() {
		// Clear the time before unlocking, so nobody reads a stale one.
		_ = os.Truncate(f.path, 0)
		_ = fl.Unlock()
	}, nil
}

// recordLock is the ledger's short lock: an in-process mutex and a flock
// on memory/.dream_ledger.lock, both waited for, held for one read, change
// and write of the record (Ledger.update). It is apart from the Dream lock
// so that a prompt's request for a deep Dream never waits for a running
// Dream.
type recordLock struct {
	path string
	mu   sync.Mutex
	// st, when set, holds the lock across processes instead of the file.
	st store.DreamLedger
}

// lock takes both locks; the returned unlock releases them.
func (l *recordLock) lock() (unlock func(), err error) {
	l.mu.Lock()
	if l.st != nil {
		release, err := l.st.LockRecord()
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		return func() {
			release()
			l.mu.Unlock()
		}, nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("dream ledger lock: %w", err)
	}
	fl := flock.New(l.path)
	if err := fl.Lock(); err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("dream ledger lock: %w", err)
	}
	return func() {
		_ = fl.Unlock()
		l.mu.Unlock()
	}, nil
}

// runningSince reports an in-process run.
func (f *flight) runningSince() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since, f.running
}

// The lock file holds "started <unix nanoseconds> pid <pid>\n".
func formatLockTime(t time.Time) string {
	return fmt.Sprintf("started %d pid %d\n", t.UnixNano(), os.Getpid())
}

// readLockTime reads the holder's start time; zero when it cannot (the
// holder may not have written it yet).
func readLockTime(path string) time.Time {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 || fields[0] != "started" {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// staleLockClearer is the optional capability of a Repo to remove git lock
// files a killed process left (*gitstore.Store has it). A Repo without it
// keeps its own, slower rule for stale locks.
type staleLockClearer interface {
	ClearStaleLocks() ([]gitstore.StaleLock, error)
}

// clearStaleGitLocks runs right after the Dream lock is taken. Every writer
// of the memory repository among our processes (a Dream, a restore) holds
// that lock, so a git lock found now belongs to a process that died
// holding it — usually a Dream killed mid-commit. Left there, it would fail
// every Dream, restore and git command until it aged out.
func (d *Dreamer) clearStaleGitLocks() {
	c, ok := d.repo.(staleLockClearer)
	if !ok {
		return
	}
	removed, err := c.ClearStaleLocks()
	if err != nil {
		// The commit that needs the lock will say what is wrong.
		d.log.Warn("dream could not remove a stale git lock", "err", err)
		return
	}
	for _, l := range removed {
		d.log.Warn("dream removed a stale git lock left by a process that no longer holds the Dream lock",
			"lock", l.Name, "age", l.Age.Round(time.Second))
	}
}
