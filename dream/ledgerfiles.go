package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// LedgerFiles is the ledger's embedded engine as the store's contract
// (store.DreamLedger): memory/.dream_ledger and the two lock files of the
// workspace dir. A Ledger on files uses them directly; the conformance
// suite and a copy between engines (migrate, export) use this.
type LedgerFiles struct {
	dir   string
	lock  *flight
	write *recordLock
}

var _ store.DreamLedger = (*LedgerFiles)(nil)

// NewLedgerFiles returns the ledger files of the workspace dir.
func NewLedgerFiles(dir string) *LedgerFiles {
	return &LedgerFiles{dir: dir, lock: &flight{path: lockPath(dir)},
		write: &recordLock{path: filepath.Join(dir, filepath.FromSlash(workspace.DreamLedgerLock))}}
}

func (f *LedgerFiles) path() string {
	return filepath.Join(f.dir, filepath.FromSlash(workspace.DreamLedger))
}

// Record implements store.DreamLedger.
func (f *LedgerFiles) Record() ([]byte, bool, error) {
	b, err := os.ReadFile(f.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read dream ledger: %w", err)
	}
	return b, true, nil
}

// PutRecord implements store.DreamLedger: atomically.
func (f *LedgerFiles) PutRecord(rec []byte) error {
	if err := os.MkdirAll(filepath.Dir(f.path()), 0o700); err != nil {
		return err
	}
	if err := workspace.WriteFile(f.path(), rec, 0o600); err != nil {
		return fmt.Errorf("write dream ledger: %w", err)
	}
	return nil
}

// LockRecord implements store.DreamLedger.
func (f *LedgerFiles) LockRecord() (func(), error) { return f.write.lock() }

// TryDream implements store.DreamLedger.
func (f *LedgerFiles) TryDream(now time.Time) (func(), bool, time.Time, error) {
	release, err := f.lock.acquire(now)
	var busy *BusyError
	if errors.As(err, &busy) {
		return nil, false, busy.Since, nil
	}
	if err != nil {
		return nil, false, time.Time{}, err
	}
	return release, true, now, nil
}

// OwnsFile reports whether rel (slash-separated, relative to the
// workspace) is one of the ledger's files: its record and its two locks.
// A copy of a workspace leaves them to the ledger's own copy
// (store.CopyDreamLedger).
func OwnsFile(rel string) bool {
	switch rel {
	case workspace.DreamLedger, workspace.DreamLedgerLock, workspace.DreamLock:
		return true
	}
	return false
}
