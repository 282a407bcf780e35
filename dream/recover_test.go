package dream

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
)

// killedRun runs a Dream whose goroutine dies right after its edits-th
// phase-2 edit reached the disk, as a killed process would: nothing of the
// run after that point happens (runtime.Goexit; the deferred lock release
// runs, as the kernel releases a dead process's flock).
func (e *env) killedRun(edits int) {
	e.t.Helper()
	n := 0
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs),
		Hook: func(point string) {
			if point != PointEdit {
				return
			}
			if n++; n == edits {
				runtime.Goexit()
			}
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		returned := false
		defer func() { done <- returned }()
		_, _ = d.Run(e.t.Context(), TriggerCron, AllScopes(), nil)
		returned = true
	}()
	if <-done {
		e.t.Fatal("the run finished instead of dying at the edit")
	}
}

// TestInterruptedDreamIsRecoveredAsDream: a Dream killed after some of its
// edits leaves an intent record; the next run commits those edits as a
// Dream commit labelled recovered (never as hand edits), restorable like
// any Dream commit, and applies the findings that were left.
func TestInterruptedDreamIsRecoveredAsDream(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(13)}
	e.srv.SetResponder(m.respond)

	// Killed during the second chunk, after its second edit: the first
	// chunk's 10 facts and 2 of the second's are on disk, uncommitted.
	e.killedRun(12)
	if e.record().Intent == nil {
		t.Fatal("no intent in the ledger after the kill")
	}
	if st, _ := e.repo.Status(nil); st.Empty() {
		t.Fatal("the killed run left no edit on disk")
	}
	if n := len(e.log(10)); n != 1 {
		t.Fatalf("commits after the kill = %d, want only init", n)
	}

	d := e.dreamer(Config{})
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("next run: outcome %s, err %v", rep.Outcome, err)
	}
	cs := e.log(10)
	if len(cs) != 3 {
		t.Fatalf("commits = %+v, want init, the recovered edits and the rest", cs)
	}
	for _, c := range cs {
		if c.Subject == gitstore.ManualSubject {
			t.Errorf("Dream's edits were committed as hand edits: %+v", c)
		}
	}
	recovered := cs[1]
	if recovered.Subject != "dream: 12 changes from history 1-4 (recovered after an interrupted run)" || rep.Recovered != recovered.Short {
		t.Errorf("recovered commit = %q (report %q)", recovered.Subject, rep.Recovered)
	}
	if cs[0].Subject != "dream: 1 change from history 1-4" {
		t.Errorf("last commit = %q, want the one finding the killed run had not applied", cs[0].Subject)
	}
	e.checkPlanted(m.findings)
	if m.analysisCalls() != 1 {
		t.Errorf("analysis calls = %d: the findings left should be applied without a new analysis", m.analysisCalls())
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d, want 4", c)
	}
	if in := e.record().Intent; in != nil {
		t.Errorf("intent still in the ledger: %+v", in)
	}
	if w := e.logs.Find(slog.LevelWarn, "recovered an interrupted run"); len(w) != 1 {
		t.Errorf("warnings = %+v", w)
	}
	// A recovered commit is Dream's, so it can be undone.
	res, err := d.Restore(recovered.Short, AllScopes())
	if err != nil {
		t.Fatalf("restore of the recovered commit: %v", err)
	}
	if len(res.Undone) == 0 || res.Undone[0].SHA != cs[0].SHA {
		t.Errorf("undone = %+v, want the later Dream commit named", res.Undone)
	}
	if got := e.read("USER.md"); got != initUser {
		t.Errorf("USER.md after restoring the recovered commit = %q", got)
	}
}

// TestKilledBeforeFirstEdit: an intent whose files are as it found them
// is removed without a commit, and its findings are applied without a new
// analysis.
func TestKilledBeforeFirstEdit(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	snaps, err := snapshot(e.workspace())
	if err != nil {
		t.Fatal(err)
	}
	in := newIntent(DefaultScope, 1, 2, snaps, []finding{{Tag: tagUser, Text: "likes tea"}}, 1, time.Now())
	e.writeRecord(record{Scopes: map[audience.Scope]*progress{DefaultScope: {}}, Intent: &in})
	m := &oneEditModel{}
	e.srv.SetResponder(m.respond)
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Recovered != "" || rep.Outcome != OutcomeCompleted {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if cs := e.log(10); len(cs) != 2 || cs[0].Subject != "dream: 1 change from history 1-2" {
		t.Errorf("commits = %+v", cs)
	}
	if m.analysisCalls() != 0 {
		t.Errorf("analysis calls = %d, want 0", m.analysisCalls())
	}
	if in := e.record().Intent; in != nil {
		t.Errorf("intent still in the ledger: %+v", in)
	}
}

func (e *env) workspace() *workspace.Root {
	e.t.Helper()
	ws, err := workspace.Open(e.ws)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ws.Close() })
	return ws
}

// TestRestoreRecoversFirst: a restore after a killed Dream records the
// killed run's edits as Dream's before it saves hand edits.
func TestRestoreRecoversFirst(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	m := &oneEditModel{findings: plantedFindings(2)}
	e.srv.SetResponder(m.respond)
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	e.hist.seed(t, 2, 2, func(int) string { return "- y" })
	m.findings = plantedFindings(5)[2:]
	e.killedRun(1)
	first := e.log(10)[0]
	if _, err := d.Restore(first.Short, AllScopes()); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.log(10) {
		if c.Subject == gitstore.ManualSubject {
			t.Errorf("a killed Dream's edit was saved as a hand edit: %+v", e.log(10))
		}
	}
	if cs := e.log(10); !strings.HasSuffix(cs[1].Subject, RecoveredSuffix) {
		t.Errorf("commits = %+v", cs)
	}
}
