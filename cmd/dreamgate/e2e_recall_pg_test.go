package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// On PostgreSQL the recall index is the database's: what one process
// archived is found by every process on the database, also one with a
// state directory of its own (another host), and none keeps an index of
// its own in its state directory.
func TestPostgresRecallIsTheDatabases(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store.postgres", dsn)
	pgWorkspaces.Store(h.ws, dsn)
	h.llm.Push(llmtest.Text("Noted."), llmtest.Text("- The user's locker code is K7Q2Z9"))
	if r := h.run("chat", "-m", "My locker code is K7Q2Z9."); r.code != 0 {
		t.Fatalf("chat: %d %s", r.code, r.stderr)
	}
	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: %d %s", r.code, r.stderr)
	}
	// Where the words were said: the archive entry and the message, from
	// the recall index (no remembered line holds them).
	why := func(what string) {
		t.Helper()
		r := h.run("why", "--scope", "default", "k7q2z9")
		if !strings.Contains(r.stdout, "What was said before holds it") || !strings.Contains(r.stdout, "locker code is K7Q2Z9") {
			t.Fatalf("why on %s: exit %d\n%s\n%s", what, r.code, r.stdout, r.stderr)
		}
	}
	why("the first process's state directory")
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Recall().Count(t.Context(), audience.Default)
	if err != nil || n != 3 {
		t.Fatalf("the database's recall index holds %d documents of the default scope (%v), want the entry, the message and its answer", n, err)
	}
	other := t.TempDir()
	h.set("stateDir", other)
	why("another state directory")
	for _, dir := range []string{h.state, other} {
		if _, err := os.Stat(recallDir(dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the state directory holds a recall index of its own (%v)", filepath.Base(recallDir(dir)), err)
		}
	}
	if n2, _ := db.Recall().Count(t.Context(), audience.Default); n2 != n {
		t.Errorf("the second process indexed again: %d documents, then %d", n, n2)
	}
}
