package dream

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// killedAt runs a Dream whose goroutine dies right after the n-th time it
// reaches point (a Deps.Hook point, or a gitstore.Options.AfterWrite one
// of the repository repo, when given), as a killed process would: nothing
// of the run after that point happens (runtime.Goexit; the deferred lock
// release runs, as the kernel releases a dead process's flock).
func (e *env) killedAt(point string, n int) {
	e.t.Helper()
	seen := 0
	hook := func(p string) {
		if p != point {
			return
		}
		if seen++; seen == n {
			runtime.Goexit()
		}
	}
	repo := Repo(e.repo)
	if strings.HasPrefix(point, "gitstore-") {
		r, err := gitstore.Open(e.ws, gitstore.Options{Tracked: workspace.MemoryFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir, AfterWrite: hook})
		if err != nil {
			e.t.Fatal(err)
		}
		repo, hook = r, nil
	}
	d, err := New(Config{Workspace: e.ws, HotTokens: e.hot}, Deps{Model: e.llm, History: e.hist, Repo: repo, Logger: slog.New(e.logs), Now: e.now, Hook: hook})
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
		e.t.Fatalf("the run finished instead of dying at %s #%d", point, n)
	}
}

// killedRun dies after the edits-th edit of phase 2.
func (e *env) killedRun(edits int) { e.killedAt(PointEdit, edits) }

// A Dream killed in the middle of phase 2 changed nothing: the edits were
// made in its working copy, so the memory files, the repository and the
// ledger are as they were, and the next run applies every finding once —
// even with a model that applies whatever it is given (issue point 3: the
// next run used to ask again for findings whose lines were already in the
// files, and a literal model doubled them).
func TestKilledMidEditChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(13), literal: true}
	e.srv.SetResponder(m.respond)

	// Killed during the second chunk, after its second edit.
	e.killedRun(12)
	if st, _ := e.repo.Status(nil); !st.Empty() {
		t.Fatalf("the killed run left edits in the memory files: %+v", st.Files)
	}
	if n := len(e.log(10)); n != 1 {
		t.Fatalf("commits after the kill = %d, want only init", n)
	}
	if p := e.progress(); p.Pending != nil || p.Cursor != 0 {
		t.Fatalf("ledger after the kill: %+v", p)
	}

	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted || rep.Recovered != "" || rep.ManualCommit != "" {
		t.Fatalf("next run: %+v, err %v", rep, err)
	}
	e.checkPlanted(m.findings)
	if cs := e.log(10); len(cs) != 2 || cs[0].Subject != "dream: 13 changes from history 1-4" {
		t.Errorf("commits = %+v", cs)
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d, want 4", c)
	}
	if _, err := os.Stat(stageDir(e.ws)); !os.IsNotExist(err) {
		t.Errorf("the working copy is still there: %v", err)
	}
}

// A Dream killed after its step's commit, before it wrote the files or the
// ledger, is finished from the commit: the files are written, the cursor
// moves as the commit's trailers say, no finding is asked for again; a
// file edited by hand in between is kept, and committed as a hand edit.
func TestKilledAfterTheCommitIsFinishedFromIt(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(6), literal: true}
	e.srv.SetResponder(m.respond)

	e.killedAt(PointCommit, 1)
	cs := e.log(10)
	if len(cs) != 2 || cs[0].Subject != "dream: 6 changes from history 1-4" {
		t.Fatalf("commits after the kill: %+v", cs)
	}
	if got := e.read("USER.md"); got != initUser {
		t.Fatalf("USER.md written before the kill: %q", got)
	}
	if c := e.hist.cursor(t); c != 0 {
		t.Fatalf("cursor after the kill = %d", c)
	}
	// A hand edit of a file the step changed, made before the restart.
	handSoul := initSoul + "- Be brief, by hand.\n"
	testkit.WriteFile(t, e.ws, "SOUL.md", handSoul)

	d := e.dreamer(Config{})
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	if got := e.read("SOUL.md"); got != handSoul {
		t.Errorf("the hand edit was overwritten: %q", got)
	}
	for _, f := range []string{"USER.md", "memory/MEMORY.md"} {
		data, _, _ := e.repo.FileAt(cs[0].SHA, f)
		if got := e.read(f); got != string(data) {
			t.Errorf("%s after recovery = %q, want the commit's %q", f, got, data)
		}
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor after recovery = %d, want 4 (from the commit)", c)
	}
	if r := e.record(); r.Head != cs[0].SHA {
		t.Errorf("ledger head = %q, want %s", r.Head, cs[0].Short)
	}
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeNothingNew {
		t.Fatalf("run after recovery: %+v, %v", rep, err)
	}
	if m.analysisCalls() != 1 {
		t.Errorf("analysis calls = %d, want the killed run's one", m.analysisCalls())
	}
	if w := e.logs.Find(slog.LevelWarn, "finished a step a kill interrupted"); len(w) != 1 {
		t.Errorf("warnings = %+v", w)
	}
}

// A partial step killed after its commit: the findings left are known
// from the commit's trailers, exactly, and applied once by the next runs.
func TestKilledPartialStepKeepsItsFindingsLeft(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(25), literal: true}
	chunk := 0 // phase-2 conversations
	m.fail = func(edits int) (llmtest.Reply, bool) {
		if edits == 0 {
			chunk++
		}
		if chunk == 2 && edits == 3 {
			return llmtest.Status(400, ""), true
		}
		return llmtest.Reply{}, false
	}
	e.srv.SetResponder(m.respond)
	e.killedAt(PointCommit, 1)
	if cs := e.log(10); !strings.HasSuffix(cs[0].Subject, "(partial: 15 of 25 findings left)") {
		t.Fatalf("commit after the kill: %q", cs[0].Subject)
	}
	if p := e.progress(); p.Pending != nil {
		t.Fatalf("the ledger knew the findings left before the recovery: %+v", p.Pending)
	}
	d := e.dreamer(Config{})
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	p := e.progress()
	if p.Pending == nil || len(p.Pending.Findings) != 15 || p.Pending.Total != 25 || p.Pending.First != 1 || p.Pending.Last != 4 {
		t.Fatalf("pending after recovery: %+v", p.Pending)
	}
	for i, f := range p.Pending.Findings {
		if got, want := f.String(), m.findings[10+i]; got != want {
			t.Errorf("finding left %d = %q, want %q", i, got, want)
		}
	}
	if rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("next run: %+v, %v", rep, err)
	}
	e.checkPlanted(m.findings)
	if m.analysisCalls() != 1 {
		t.Errorf("analysis calls = %d, want 1", m.analysisCalls())
	}
}

// A step killed between two of its files: the next start writes the
// others from the commit.
func TestKilledBetweenTwoFilesOfAStep(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(3)}
	e.srv.SetResponder(m.respond)
	e.killedAt(gitstore.PointCheckout, 1)
	if st, _ := e.repo.Status(nil); len(st.Files) != 2 {
		t.Fatalf("after the kill, %d files differ from the commit, want 2 of 3: %+v", len(st.Files), st.Files)
	}
	if err := e.dreamer(Config{}).Recover(); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.repo.Status(nil); !st.Empty() {
		t.Errorf("files still differ from the commit: %+v", st.Files)
	}
	e.checkPlanted(m.findings)
}

// newIntent is the intent an earlier version wrote before its phase 2
// edited the files themselves.
func newIntent(scope audience.Scope, first, last int, snaps []fileSnap, findings []finding, total int, now time.Time) intent {
	in := intent{Scope: scope, First: first, Last: last, Started: now, PID: os.Getpid(), Findings: findings, Total: total}
	for _, s := range snaps {
		f := intentFile{Path: s.rel, Missing: !s.exists && !s.link}
		if s.exists {
			f.SHA256 = hashOf(s.data)
		}
		in.Files = append(in.Files, f)
	}
	return in
}

// A Dream of an earlier version killed after some of its edits left them
// in the files and an intent in the ledger: the next run commits those
// edits as a Dream commit labelled recovered (never as hand edits),
// restorable like any Dream commit, and applies the findings that were
// left.
func TestEarlierVersionsInterruptedDreamIsRecovered(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(13)}
	e.srv.SetResponder(m.respond)
	snaps, err := snapshot(e.workspace())
	if err != nil {
		t.Fatal(err)
	}
	all := parseAnalysis(strings.Join(m.findings, "\n")).findings
	in := newIntent(DefaultScope, 1, 4, snaps, all, 13, time.Now())
	in.Applied = 10
	e.writeRecord(record{Scopes: map[audience.Scope]*progress{DefaultScope: {}}, Intent: &in})
	// Its first chunk's ten facts and two of the second's, on disk.
	for _, f := range m.findings[:12] {
		for tag, h := range headings {
			if fact, ok := strings.CutPrefix(f, tag); ok {
				testkit.WriteFile(t, e.ws, h[0], e.read(h[0])+"- "+fact+"\n")
			}
		}
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
	if m.analysisCalls() != 0 {
		t.Errorf("analysis calls = %d: the findings left should be applied without a new analysis", m.analysisCalls())
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d, want 4", c)
	}
	if in := e.record().Intent; in != nil {
		t.Errorf("intent still in the ledger: %+v", in)
	}
	res, err := d.Restore(recovered.Short, AllScopes(), RestoreOptions{})
	if err != nil {
		t.Fatalf("restore of the recovered commit: %v", err)
	}
	if res.Plan.Conflicts() != 0 || len(res.Files) == 0 {
		t.Errorf("restore of the recovered commit = %+v, want its lines out, no conflict (the later Dream only appended)", res.Plan)
	}
}

// TestKilledBeforeFirstEdit: an earlier version's intent whose files are
// as it found them is removed without a commit, and its findings are
// applied without a new analysis.
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

// TestRestoreRecoversFirst: a restore after a Dream killed after its
// commit finishes that step first (its files written from the commit),
// and saves no hand edit.
func TestRestoreRecoversFirst(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	m := &oneEditModel{findings: plantedFindings(2)}
	e.srv.SetResponder(m.respond)
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	first := e.log(10)[0]
	e.hist.seed(t, 2, 2, func(int) string { return "- y" })
	m.findings = plantedFindings(5)[2:]
	e.killedAt(PointCommit, 1)
	if _, err := d.Restore(first.Short, AllScopes(), RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.log(10) {
		if c.Subject == gitstore.ManualSubject {
			t.Errorf("a killed Dream's step was saved as a hand edit: %+v", e.log(10))
		}
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d: the killed step was not taken in before the restore", c)
	}
}

// A Dream killed while editing a scope's files is recovered in that scope:
// the files as found are committed as Dream's, with that scope's paths
// alone, and the findings left become that scope's.
func TestRecoverAnInterruptedScope(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team fact")
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	e.add(team, "team fact 2")
	e.add(team, "team fact 3")
	before := e.read("scopes/team-slack-t1/USER.md")
	base, err := workspace.Open(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := base.Scope(team)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := snapshot(ws)
	ws.Close()
	base.Close()
	if err != nil {
		t.Fatal(err)
	}
	findings := []finding{{Tag: tagUser, Text: "team fact 2"}, {Tag: tagUser, Text: "team fact 3"}}
	in := newIntent(team, 2, 3, snaps, findings, 2, time.Now())
	in.Applied = 1
	rec := e.record()
	rec.Intent = &in
	e.writeRecord(rec)
	writeFile(t, e.ws, "scopes/team-slack-t1/USER.md", before+"- team fact 2\n")
	writeFile(t, e.ws, "USER.md", initUser+"- a hand edit of the root\n")
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	c := e.commits()[0]
	if !strings.HasSuffix(c.c.Subject, RecoveredSuffix) || !slices.Equal(c.changed, []string{"scopes/team-slack-t1/USER.md"}) || !strings.HasSuffix(c.c.Body, "Scope: team-slack-t1") {
		t.Errorf("recovered commit %q changed %v, body %q", c.c.Subject, c.changed, lastLine(c.c.Body))
	}
	r := e.record()
	if r.Intent != nil || r.Scopes[team].Pending == nil || len(r.Scopes[team].Pending.Findings) != 1 || r.Scopes[audience.Default].Pending != nil {
		t.Errorf("after recovery: intent %+v, team %+v", r.Intent, r.Scopes[team])
	}
}
