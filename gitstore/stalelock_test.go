package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestClearStaleLocksRemovesAFreshIndexLock(t *testing.T) {
	s, dir := openStore(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	// A lock of a second ago: the Store alone would wait ten minutes before
	// calling it stale; a caller that holds Dream's lock knows it is.
	testkit.WriteFile(t, dir, ".git/index.lock", "")
	got, err := s.ClearStaleLocks()
	if err != nil {
		t.Fatalf("ClearStaleLocks: %v", err)
	}
	if len(got) != 1 || got[0].Name != "index.lock" {
		t.Errorf("removed %+v, want index.lock", got)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index.lock still there: %v", err)
	}
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	checkGit(t, s, dir)

	// Nothing to clear is not an error.
	if got, err := s.ClearStaleLocks(); err != nil || len(got) != 0 {
		t.Errorf("second ClearStaleLocks = %+v, %v; want nothing", got, err)
	}
}
