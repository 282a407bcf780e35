package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// A one-process workspace moves into PostgreSQL and back through the
// built binary: migrate copies every history entry with its cursor and
// the cursors; run again, it changes nothing; export writes them back as
// files that hold the same entries and cursors, and a process on the
// exported files numbers on from the same cursor.
func TestPostgresMigrateAndExportRoundTrip(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	if r := h.run("onboard"); r.code != 0 {
		t.Fatalf("onboard: %d %s", r.code, r.stderr)
	}
	memDir := filepath.Join(h.ws, filepath.FromSlash(workspace.MemoryDir))
	files, err := history.Open(memDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	team := audience.Scope("team-slack-t1")
	for i := range 30 {
		scope := []audience.Scope{audience.Default, team}[i%2]
		src := store.Source{SessionID: "g1", From: i * 4, To: i*4 + 4}
		if _, err := files.AppendFrom(scope, fmt.Sprintf("- fact %d, \"quoted\" and ünïcode", i), "slack:C1", src); err != nil {
			t.Fatal(err)
		}
	}
	if err := files.SetDreamCursor(12); err != nil {
		t.Fatal(err)
	}
	if n, err := files.Compact(25); err != nil || n != 5 {
		t.Fatalf("compact: %d %v", n, err)
	}
	want, _ := files.Since(0, 0)
	wantLast, _ := files.LastCursor()

	r := h.run("migrate", "--to-postgres", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "25 history entries") || strings.Contains(r.stdout+r.stderr, "password") {
		t.Fatalf("migrate: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("migrate", "--to-postgres", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "Nothing to copy") {
		t.Fatalf("a second migrate: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	pgWorkspaces.Store(h.ws, dsn)
	if got := readHistory(t, h.ws); len(got) != len(want) || got[0].Cursor != want[0].Cursor {
		t.Fatalf("the database holds %d entries from %v, want %d", len(got), got, len(want))
	}
	if c := strings.TrimSpace(string(readDreamCursor(t, h.ws))); c != "12" {
		t.Fatalf("the database's Dream cursor is %s", c)
	}

	h.set("store.postgres", dsn)
	out := filepath.Join(t.TempDir(), "export")
	r = h.run("export", out)
	if r.code != 0 {
		t.Fatalf("export: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	back, err := history.Open(filepath.Join(out, "workspace", filepath.FromSlash(workspace.MemoryDir)), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := back.Since(0, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("exported entries differ:\n%+v\nwant\n%+v", got, want)
	}
	if dc, _ := back.DreamCursor(); dc != 12 {
		t.Fatalf("exported Dream cursor %d", dc)
	}
	if last, _ := back.LastCursor(); last != wantLast {
		t.Fatalf("exported last cursor %d, want %d", last, wantLast)
	}
	if _, err := os.Stat(filepath.Join(out, "workspace", "USER.md")); err != nil {
		t.Fatalf("the exported workspace has no memory files: %v", err)
	}
	if r := h.run("export", out); r.code == 0 || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("an export into a full directory: %d %s", r.code, r.stderr)
	}
}

// migrate without a database, or with one that does not parse, says how
// to name it (exit 2).
func TestMigrateNeedsADatabase(t *testing.T) {
	h := newHarness(t)
	if r := h.run("migrate", "--to-postgres"); r.code != 2 || !strings.Contains(r.stderr, "DREAMGATE_POSTGRES_URL") {
		t.Fatalf("migrate without a DSN: %d %s", r.code, r.stderr)
	}
	if r := h.run("migrate"); r.code != 2 || !strings.Contains(r.stderr, "--to-postgres") {
		t.Fatalf("migrate without --to-postgres: %d %s", r.code, r.stderr)
	}
}
