package dream

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A workspace from before the ledger: its .dream_state and .dream_intent
// are read into the ledger once, at the first start (Recover), said in the
// log, and removed; what they held carries on — the killed run's findings
// are applied without a new analysis, the failure count and the skips are
// kept.
func TestLedgerMigratesTheOldFilesOnce(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 8, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	if err := e.hist.SetDreamCursor(4); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	state := fmt.Sprintf(`{
  "failures": {"first": 5, "last": 8, "count": 2, "reason": "the model's analysis was empty"},
  "last_run": {"when": %q, "trigger": "cron", "outcome": "failed", "entries": 4, "first": 5, "last": 8, "duration": 1000000},
  "skips": [{"when": %q, "first": 1, "last": 2, "reason": "the editing step kept repeating the same tool call"}]
}`, when.Format(time.RFC3339), when.Add(-time.Hour).Format(time.RFC3339))
	testkitWrite(t, e.ws, ".dream_state", state)
	snaps, err := snapshot(e.workspace())
	if err != nil {
		t.Fatal(err)
	}
	m := &oneEditModel{findings: plantedFindings(2)}
	in := newIntent(DefaultScope, 5, 8, snaps, parseAnalysis(strings.Join(m.findings, "\n")).findings, 2, when)
	b, _ := json.Marshal(in)
	testkitWrite(t, e.ws, ".dream_intent", string(b))

	d := e.dreamer(Config{})
	// A reader before the first start sees the old progress already.
	if st := d.Status(AllScopes()); st.Last == nil || st.Last.Outcome != OutcomeFailed || len(st.Skips) != 1 || st.Cursor != 4 {
		t.Fatalf("status before the migration = %+v", st)
	}
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{".dream_state", ".dream_intent"} {
		if _, err := os.Stat(filepath.Join(e.ws, "memory", old)); !os.IsNotExist(err) {
			t.Errorf("memory/%s still there after the migration: %v", old, err)
		}
	}
	if got := e.logs.Find(slog.LevelInfo, "moved into its ledger"); len(got) != 2 {
		t.Errorf("migration log lines = %+v, want one per old file", got)
	}
	r := e.record()
	p := r.Scopes[DefaultScope]
	if r.Intent != nil || p == nil || p.Cursor != 4 || p.Failures == nil || p.Failures.Count != 2 ||
		p.Pending == nil || len(p.Pending.Findings) != 2 || len(p.Skips) != 1 || p.LastRun == nil {
		t.Fatalf("ledger after the migration = %+v (default scope %+v)", r, p)
	}

	e.srv.SetResponder(m.respond)
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted || rep.First != 5 || rep.Last != 8 {
		t.Fatalf("run after the migration: %+v, %v", rep, err)
	}
	if m.analysisCalls() != 0 {
		t.Errorf("analysis calls = %d: the findings the killed run left should be applied as they are", m.analysisCalls())
	}
	e.checkPlanted(m.findings)
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	if got := e.logs.Find(slog.LevelInfo, "moved into its ledger"); len(got) != 2 {
		t.Errorf("migration log lines after a second start = %d, want still two", len(got))
	}
}

// testkitWrite writes a file under the workspace's memory directory.
func testkitWrite(t *testing.T, ws, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, "memory", name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// memory/.dream_cursor moved by someone else (nanobot's own Dream, a
// person) wins over the ledger, forward and back, with a warning; what the
// ledger kept for a batch the file has passed is dropped.
func TestLedgerFollowsTheCursorFile(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 8, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("no idea") })
	d := e.dreamer(Config{MaxBatchSize: 4})
	if rep, _ := d.Run(t.Context(), TriggerCron, AllScopes(), nil); rep.Outcome != OutcomeFailed || rep.Failures != 1 {
		t.Fatalf("first run: %+v", rep)
	}
	if err := e.hist.SetDreamCursor(4); err != nil { // forward, past the failing batch
		t.Fatal(err)
	}
	if st := d.Status(AllScopes()); st.Cursor != 4 || st.Backlog != 4 {
		t.Errorf("status after the file moved: cursor %d, backlog %d", st.Cursor, st.Backlog)
	}
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("[SKIP]") })
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.First != 5 || rep.Last != 8 {
		t.Fatalf("run after the file moved forward: %+v, %v", rep, err)
	}
	if w := e.logs.Find(slog.LevelWarn, "differs from the Dream ledger"); len(w) != 1 {
		t.Errorf("warnings = %+v", w)
	}
	if p := e.progress(); p.Failures != nil || p.Cursor != 8 {
		t.Errorf("progress = %+v, want the passed batch's failures dropped and cursor 8", p)
	}
	if err := e.hist.SetDreamCursor(2); err != nil { // back: read again
		t.Fatal(err)
	}
	if rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil || rep.First != 3 || rep.Last != 8 {
		t.Errorf("run after the file moved back: %+v, %v", rep, err)
	}
}

// A process killed between its two writes — memory/.dream_cursor moved,
// the ledger not yet — loses nothing and applies nothing twice: the next
// run follows the file, and the committed batch is not read again.
func TestKilledBetweenCursorAndLedger(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(3)}
	e.srv.SetResponder(m.respond)

	// A second store on the same files, whose cursor write ends the run
	// as a kill would.
	dying, err := history.Open(filepath.Join(e.ws, "memory"), history.Options{AfterWrite: func(point string) {
		if point == "dream-cursor" {
			runtime.Goexit()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: dying, Repo: e.repo, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		returned := false
		defer func() { done <- returned }()
		_, _ = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
		returned = true
	}()
	if <-done {
		t.Fatal("the run finished instead of dying at its cursor write")
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Fatalf("cursor file = %d, want 4 (written before the kill)", c)
	}
	if r := e.record(); r.Frontier != 0 || r.Head != e.log(10)[1].SHA {
		t.Fatalf("ledger after the kill = %+v, want the old frontier and head still there", r)
	}

	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeNothingNew || rep.Recovered != e.log(1)[0].Short {
		t.Fatalf("next run: %+v, %v", rep, err)
	}
	if m.analysisCalls() != 1 {
		t.Errorf("analysis calls = %d, want the killed run's one", m.analysisCalls())
	}
	e.checkPlanted(m.findings)
	if r := e.record(); r.Intent != nil || r.Frontier != 4 || r.Scopes[DefaultScope].Cursor != 4 {
		t.Errorf("ledger after the next run = %+v", r)
	}
	if w := e.logs.Find(slog.LevelWarn, "drops findings"); len(w) != 0 {
		t.Errorf("warnings = %+v", w)
	}
}

// Progress is kept per memory scope in the one record; memory/.dream_cursor
// is the frontier: the least cursor of the scopes.
func TestLedgerKeepsProgressPerScope(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	for _, sc := range []audience.Scope{"team-slack-t1", DefaultScope} {
		if _, err := e.hist.AppendIn(sc, "- fact", "k"); err != nil {
			t.Fatal(err)
		}
	}
	e.writeRecord(record{Scopes: map[audience.Scope]*progress{DefaultScope: {}, "team-slack-t1": {Cursor: 2}}})
	e.srv.Push(llmtest.Text("[SKIP]"))
	// The team's entry 3 waits for a run about the team.
	if rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, OnlyScopes(DefaultScope), nil); err != nil || rep.Last != 4 || rep.Entries != 3 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	r := e.record()
	if r.Scopes[DefaultScope].Cursor != 4 || r.Scopes["team-slack-t1"].Cursor != 2 || r.Frontier != 2 {
		t.Errorf("ledger = frontier %d, scopes %+v", r.Frontier, r.Scopes)
	}
	if c := e.hist.cursor(t); c != 2 {
		t.Errorf("memory/.dream_cursor = %d, want the frontier 2", c)
	}
	raw, _ := os.ReadFile(filepath.Join(e.ws, "memory", ".dream_ledger"))
	if !strings.Contains(string(raw), `"": {`) || !strings.Contains(string(raw), `"team-slack-t1": {`) {
		t.Errorf("the record does not hold the scopes by name:\n%s", raw)
	}
}

// A restore that undoes the last run's commit says so in Status; the next
// run's commit stands again.
func TestRestoreMarksTheLastRunUndone(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	first := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")
	res, err := d.Restore(first.Commit, AllScopes(), RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := d.Status(AllScopes()).Last; l == nil || l.Commit != first.Commit || l.UndoneBy != res.Revert.Short {
		t.Errorf("last run after the restore = %+v, want %s undone by %s", l, first.Commit, res.Revert.Short)
	}
	again := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes coffee.\n")
	if l := d.Status(AllScopes()).Last; l == nil || l.Commit != again.Commit || l.UndoneBy != "" {
		t.Errorf("last run after the next Dream = %+v", l)
	}
}

// The retention never moves the cursor while a Dream holds the lock.
func TestRetentionLeavesARunningDreamAlone(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 30, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	d := e.dreamer(Config{})
	release, err := d.ledger.lock.acquire(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := Retention{Ledger: NewLedger(e.ws, e.hist, nil), MaxEntries: 10, MaxAge: time.Hour, Now: func() time.Time { return time.Now().AddDate(2, 0, 0) }}
	if retired, dropped, err := r.Pass(); retired != 0 || dropped != 0 || err != nil {
		t.Errorf("pass beside a Dream: %d, %d, %v", retired, dropped, err)
	}
	release()
	if retired, _, err := r.Pass(); retired != 20 || err != nil {
		t.Errorf("pass after it: %d, %v", retired, err)
	}
	if c := e.hist.cursor(t); c != 20 {
		t.Errorf("cursor = %d, want 20", c)
	}
}

// A new scope's first entry that lands between the unread entries of
// another scope is read into the new scope's memory (issue point 1: a run
// about the other scope alone moved the frontier past it, the new scope
// was taken to have read up to the frontier, and its fact reached no
// memory file after any number of Dreams).
func TestNewScopeBetweenAnothersEntriesIsDreamed(t *testing.T) {
	e := newScopedEnv(t)
	e.add(audience.Default, "operator fact one")
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	e.add(audience.Default, "operator fact two")
	e.add(person, "Ana keeps bees")
	e.add(audience.Default, "operator fact three")
	if _, err := d.Run(t.Context(), TriggerManual, OnlyScopes(audience.Default), nil); err != nil {
		t.Fatal(err)
	}
	if c := e.hist.cursor(t); c >= 3 {
		t.Errorf("the frontier moved to %d, past the new scope's entry 3", c)
	}
	for range 2 {
		if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := readOptional(e.ws, "scopes/person-slack-t1-u2/USER.md"); !strings.Contains(got, "Ana keeps bees") {
		t.Errorf("the new scope's fact is in no memory file: person USER.md %q", got)
	}
}
