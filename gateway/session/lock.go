package session

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// A conversation has at most one writing process. A session's lock is an
// exclusive, non-blocking flock on "<prefix>.lock" beside its files, taken
// before its files are read. A live session keeps it while its process
// works on it; the process may then let it go (Store.Release): the session
// sleeps, its append handle and lock file closed, so that a gateway that
// saw a thousand conversations in the last hour holds descriptors only for
// those it is answering now. Waking (the next Get, or a write) takes the
// lock again and checks that the files are as the session left them; when
// another process changed them meanwhile, the session is stale: Get loads
// it afresh, and a write through the stale one fails (errStale). A read of
// a sleeping session sees what it held when it fell asleep.

// LockedError is returned when another process holds a session: it has it
// loaded and appends to its file.
type LockedError struct {
	Key string
	// PID is the holder's process ID as it recorded it, 0 when unknown.
	PID int
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("session %s is open in another process (pid %d)", e.Key, e.PID)
}

// Sentence is what the person who asked reads.
func (e *LockedError) Sentence() string {
	pid := ""
	if e.PID > 0 {
		pid = fmt.Sprintf(" (pid %d)", e.PID)
	}
	return "This conversation is open in another dreamgate process" + pid + "; use --session NAME for another one."
}

// errStale: another process changed a sleeping session's files.
var errStale = errors.New("the conversation was changed by another process while this one let go of it; load it again")

// takeLock takes the lock file at path for key without waiting. The lock
// file is left in place when released: removing it would race another
// process that has it open and is about to lock it.
func takeLock(path, key string) (*flock.Flock, error) {
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock session %s: %w", key, err)
	}
	if !ok {
		return nil, &LockedError{Key: key, PID: readPID(path)}
	}
	// Who holds it, for the refusal the other process gives; best effort.
	writePID(path)
	return fl, nil
}

// fileStamp is what a sleeping session knows of its files: each one's
// identity, size and modification time (nil when it does not exist).
type fileStamp struct {
	msgs, meta os.FileInfo
}

func (s *Session) stampLocked() fileStamp {
	stat := func(path string) os.FileInfo {
		fi, err := os.Stat(path)
		if err != nil {
			return nil
		}
		return fi
	}
	return fileStamp{msgs: stat(s.prefix + ".jsonl"), meta: stat(s.prefix + ".meta.json")}
}

func (a fileStamp) same(b fileStamp) bool {
	same := func(x, y os.FileInfo) bool {
		if x == nil || y == nil {
			return x == nil && y == nil
		}
		return os.SameFile(x, y) && x.Size() == y.Size() && x.ModTime().Equal(y.ModTime())
	}
	return same(a.msgs, b.msgs) && same(a.meta, b.meta)
}

// sleep lets go of the session's append handle and lock; it stays in
// memory. It reports whether the session was awake.
func (s *Session) sleep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv != nil {
		return false // no handle or lock to let go of
	}
	if s.asleep || s.stale {
		return false
	}
	s.closeLocked()
	s.stamp = s.stampLocked()
	s.asleep = true
	return true
}

// wakeLocked takes a sleeping session's lock again and checks its files.
// It fails with a *LockedError when another process holds the
// conversation now, and with errStale when another process changed it;
// either way the session is stale from then on. The caller holds s.mu.
func (s *Session) wakeLocked() error {
	if s.stale {
		return errStale
	}
	if !s.asleep {
		return nil
	}
	fl, err := takeLock(s.prefix+".lock", s.meta.Key)
	if err != nil {
		s.stale = true
		return err
	}
	if !s.stamp.same(s.stampLocked()) {
		_ = fl.Close()
		s.stale = true
		return errStale
	}
	s.lock, s.asleep = fl, false
	return nil
}

// setLock gives the session the lock it now holds.
func (s *Session) setLock(fl *flock.Flock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lock = fl
}

// closeLocked closes the append handle and releases the lock. The caller
// holds s.mu.
func (s *Session) closeLocked() error {
	var errs []error
	if s.file != nil {
		errs = append(errs, s.file.Close())
		s.file = nil
	}
	if s.lock != nil {
		if err := s.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("unlock session %s: %w", s.meta.Key, err))
		}
		s.lock = nil
	}
	return errors.Join(errs...)
}

// writePID records this process's id in the lock file at path, in a
// fixed width and without truncating: on ext4, closing a file that was
// truncated forces its data out at once (the replace-by-truncate safety
// of auto_da_alloc), which made every session load pay a write-back, a
// tenth of the gateway's CPU when many conversations start at once. Any
// earlier id is overwritten whole, as every id is written this wide.
func writePID(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintf(f, "%-*d\n", pidWidth, os.Getpid())
	_ = f.Close()
}

// pidWidth fits any process id (a 64-bit integer) padded with spaces.
const pidWidth = 20

func readPID(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
