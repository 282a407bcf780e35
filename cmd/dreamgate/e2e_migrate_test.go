package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
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
	// Two conversations, one of them set aside by /new.
	h.llm.Push(llmtest.Text("Noted."), llmtest.Text("- tea"), llmtest.Text("Hi again."))
	for _, msg := range []string{"I prefer tea.", "/new", "hello"} {
		if r := h.run("chat", "-m", msg); r.code != 0 {
			t.Fatalf("chat %q: %d %s", msg, r.code, r.stderr)
		}
	}
	want, _ = files.Since(0, 0)
	wantLast, _ = files.LastCursor()
	// A message a killed gateway accepted and never answered.
	ib, err := gateway.OpenInboxFile(filepath.Join(h.state, "inbox.jsonl"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pending := store.InboxMessage{Channel: "slack", MessageID: "1712.9", Conversation: "slack:C1", Origin: []byte(`{"channel":"slack","chat":"C1","message_id":"1712.9"}`), Text: "still there?", Accepted: time.Now().UTC().Truncate(time.Second)}
	if _, err := ib.Accept(pending); err != nil {
		t.Fatal(err)
	}
	ib.Close()
	// Dream's ledger: the team's scope has read further than the frontier.
	ledgerRecord := []byte(`{"version":2,"frontier":12,"scopes":{"":{"cursor":12},"team-slack-t1":{"cursor":20}}}`)
	if err := dream.NewLedgerFiles(h.ws).PutRecord(ledgerRecord); err != nil {
		t.Fatal(err)
	}
	convs := session.NewFiles(filepath.Join(h.state, "sessions"))
	wantConvs, err := convs.List()
	if err != nil || len(wantConvs) != 2 {
		t.Fatalf("conversations on files: %+v %v", wantConvs, err)
	}

	r := h.run("migrate", "--to-postgres", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "26 history entries") || !strings.Contains(r.stdout, "2 conversations (4 messages)") || !strings.Contains(r.stdout, "1 unanswered message") {
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
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := db.DreamLedger().Record(); err != nil || !ok || !bytes.Equal(rec, ledgerRecord) {
		t.Fatalf("the database's Dream ledger = %s %v %v", rec, ok, err)
	}
	db.Close()

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
	if rec, ok, _ := dream.NewLedgerFiles(filepath.Join(out, "workspace")).Record(); !ok || !bytes.Equal(rec, ledgerRecord) {
		t.Fatalf("the exported Dream ledger = %s", rec)
	}
	if dc, _ := back.DreamCursor(); dc != 12 {
		t.Fatalf("exported Dream cursor %d", dc)
	}
	if last, _ := back.LastCursor(); last != wantLast {
		t.Fatalf("exported last cursor %d, want %d", last, wantLast)
	}
	ib2, err := gateway.OpenInboxFile(filepath.Join(out, "state", "inbox.jsonl"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if open, _ := ib2.Open(); len(open) != 1 || open[0].MessageID != "1712.9" || open[0].Text != "still there?" {
		t.Fatalf("the exported inbox holds %+v", open)
	}
	ib2.Close()
	back2 := session.NewFiles(filepath.Join(out, "state", "sessions"))
	gotConvs, err := back2.List()
	if err != nil || len(gotConvs) != len(wantConvs) {
		t.Fatalf("exported conversations %+v %v, want %+v", gotConvs, err, wantConvs)
	}
	for _, w := range wantConvs {
		g, ok, _ := back2.Generation(w.Key, w.ID)
		a, _ := back2.Lines(w.Key, w.ID, 0, 0)
		b, _ := convs.Lines(w.Key, w.ID, 0, 0)
		// A conversation whose metadata was never written comes back with
		// the record of its ID (a load would have given it a new one).
		sameMeta := w.Meta == nil || string(g.Meta) == string(w.Meta)
		if !ok || g.Live != w.Live || !sameMeta || len(a) != len(b) || string(bytes.Join(a, nil)) != string(bytes.Join(b, nil)) {
			t.Fatalf("exported conversation %s/%s = %+v, want %+v", w.Key, w.ID, g, w)
		}
	}
	h.llm.Push(llmtest.Text("Still here."))
	h.set("stateDir", filepath.Join(out, "state"))
	h.set("workspace", filepath.Join(out, "workspace"))
	h.set("store.postgres", "")
	if r := h.run("chat", "-m", "and now?"); r.code != 0 {
		t.Fatalf("a chat on the exported files: %d %s", r.code, r.stderr)
	}
	if s, _, _ := back2.Live("terminal:default"); s.Lines != 4 {
		t.Fatalf("the exported conversation after one more turn holds %d messages, want 4", s.Lines)
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
