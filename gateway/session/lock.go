package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

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

// lockKey takes the exclusive lock of key's conversation ("<base>.lock"
// beside its files) without waiting. The caller holds st.mu. The lock file
// is left in place when released: removing it would race another process
// that has it open and is about to lock it.
func (st *Store) lockKey(key string) error {
	return st.lockPath(key, key, st.prefix(key)+".lock")
}

// lockPath takes the lock file at path for key and records it under name
// in st.locks. The caller holds st.mu.
func (st *Store) lockPath(name, key, path string) error {
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return fmt.Errorf("lock session %s: %w", key, err)
	}
	if !ok {
		return &LockedError{Key: key, PID: readPID(path)}
	}
	// Who holds it, for the refusal the other process gives; best effort.
	writePID(path)
	st.locks[name] = fl
	return nil
}

// asideLockName names a set-aside conversation's lock in st.locks; a key
// never starts with a NUL byte.
func asideLockName(prefix string) string { return "\x00" + prefix }

// unlockKey releases the lock recorded under name (a key, or
// asideLockName) if this store holds it. The caller holds st.mu.
func (st *Store) unlockKey(name string) error {
	fl, ok := st.locks[name]
	if !ok {
		return nil
	}
	delete(st.locks, name)
	if err := fl.Close(); err != nil {
		return fmt.Errorf("unlock session: %w", err)
	}
	return nil
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
