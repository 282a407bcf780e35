package dream

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// The deep Dream's requests are part of the ledger. A workspace of an
// earlier version kept them apart, in memory/.dream_deep: a reader sees
// them before the first start, the first start moves them into the ledger
// once and removes the file, and a deep Dream that version left written
// and not committed is committed as a deep Dream, never as hand edits.
func TestDeepRequestsMoveIntoTheLedgerOnce(t *testing.T) {
	e := newEnv(t)
	testkit.WriteFile(t, e.ws, "USER.md", initUser+"- written by the interrupted deep Dream\n")
	testkitWrite(t, e.ws, ".dream_deep", `{"scopes": ["", "team-slack-t1", "../x"], "writing": {"scope": "", "why": "asked for", "started": "2026-11-01T10:00:00Z"}}`)
	d := e.dreamer(Config{})
	if got := d.Ledger().DeepRequested(); !slices.Equal(got, []audience.Scope{"", "team-slack-t1"}) {
		t.Fatalf("requests before the first start = %q", got)
	}
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "memory", ".dream_deep")); !os.IsNotExist(err) {
		t.Errorf("memory/.dream_deep still there: %v", err)
	}
	if got := e.logs.Find(slog.LevelInfo, "moved into its ledger"); len(got) != 1 {
		t.Errorf("migration log lines = %+v", got)
	}
	c := e.log(1)[0]
	if !strings.HasPrefix(c.Subject, DeepSubject) || !strings.Contains(c.Subject, "recovered") {
		t.Errorf("last commit %q, want the interrupted deep Dream's", c.Subject)
	}
	r := e.record()
	if r.DeepWriting != nil || r.Scopes[DefaultScope].LastDeep == nil {
		t.Errorf("ledger after the migration: writing %+v, default scope %+v", r.DeepWriting, r.Scopes[DefaultScope])
	}
	// The recovered deep Dream answered the root's request; the team's
	// still waits.
	if got := d.Ledger().DeepRequested(); !slices.Equal(got, []audience.Scope{"team-slack-t1"}) {
		t.Errorf("requests after the migration = %q", got)
	}
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	if got := e.logs.Find(slog.LevelInfo, "moved into its ledger"); len(got) != 1 {
		t.Errorf("a second start migrated again: %+v", got)
	}
}

// Asking for a deep Dream never waits for a running Dream: it takes the
// ledger's record lock alone, and the running Dream's own writes, made on
// the record as it is on disk, keep the request.
func TestDeepRequestNeverWaitsForADream(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	h, err := d.ledger.begin(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer h.end()
	other := NewLedger(e.ws, e.hist, nil) // the gateway's, in another process
	if err := other.RequestDeep("team-slack-t1"); err != nil {
		t.Fatalf("request while a Dream runs: %v", err)
	}
	if err := h.batchDone(DefaultScope, 0); err != nil {
		t.Fatal(err)
	}
	if got := other.DeepRequested(); !slices.Equal(got, []audience.Scope{"team-slack-t1"}) {
		t.Errorf("requests after the running Dream wrote the ledger = %q", got)
	}
	if err := other.RequestDeep("../x"); err == nil {
		t.Error("a request for a name that is no scope was taken")
	}
}

// Cursor, which every chat turn asks, decodes the record once per file
// and still sees every write, and memory/.dream_cursor moved by someone
// else.
func TestLedgerCursorSeesEveryWrite(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 9, func(i int) string { return "- x" })
	l := NewLedger(e.ws, e.hist, nil)
	if c, err := l.Cursor("team-slack-t1"); err != nil || c != 0 {
		t.Fatalf("cursor with no record = %d, %v", c, err)
	}
	e.writeRecord(record{Scopes: map[audience.Scope]*progress{DefaultScope: {Cursor: 2}, "team-slack-t1": {Cursor: 5}}, Frontier: 0})
	if c, _ := l.Cursor("team-slack-t1"); c != 5 {
		t.Errorf("cursor = %d, want 5", c)
	}
	if _, err := l.update(func(r *record) { r.batchDone("team-slack-t1", 7) }); err != nil {
		t.Fatal(err)
	}
	if c, _ := l.Cursor("team-slack-t1"); c != 7 {
		t.Errorf("cursor after a write = %d, want 7", c)
	}
	if c, _ := l.Cursor("person-slack-t1-u2"); c != 2 {
		t.Errorf("an unknown scope's cursor = %d, want the frontier 2", c)
	}
	if err := e.hist.SetDreamCursor(8); err != nil { // moved forward by nanobot's own Dream
		t.Fatal(err)
	}
	if c, _ := l.Cursor(DefaultScope); c != 8 {
		t.Errorf("cursor after the file moved = %d, want 8", c)
	}
}
