package dream

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// A Dream killed mid-commit leaves .git/index.lock. The next Dream and
// restore, holding the Dream lock, know nobody of ours holds it: they
// remove it at once (saying so in the log) instead of failing until it is
// ten minutes old.
func TestStaleGitLockIsClearedUnderTheDreamLock(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	lock := filepath.Join(e.ws, ".git", "index.lock")
	leave := func() {
		t.Helper()
		testkit.WriteFile(t, e.ws, ".git/index.lock", "")
	}
	cleared := func(what string) {
		t.Helper()
		if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: index.lock still there: %v", what, err)
		}
		if n := len(e.logs.Find(slog.LevelWarn, "stale git lock")); n == 0 {
			t.Errorf("%s: no log line about the stale git lock", what)
		}
		e.logs.Reset()
	}

	leave()
	first := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")
	cleared("dream")

	leave()
	if _, err := d.Restore(first.Commit, AllScopes(), RestoreOptions{}); err != nil {
		t.Fatalf("Restore with a stale index.lock: %v", err)
	}
	cleared("restore")
	if got := e.read("USER.md"); got != initUser {
		t.Errorf("USER.md after restore = %q", got)
	}

	// While a Dream holds the lock, a refused request touches nothing.
	release, err := d.ledger.lock.acquire(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leave()
	if _, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil); !errors.As(err, new(*BusyError)) {
		t.Fatalf("Run beside a running Dream = %v, want a BusyError", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("a refused Dream removed the running one's index.lock: %v", err)
	}
	release()
}
