package dream

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// Scopes of the tests.
const (
	team   audience.Scope = "team-slack-t1"
	person audience.Scope = "person-slack-t1-u2"
)

// scopedEnv is a test workspace whose memory repository tracks every
// scope folder's memory files, and whose model answers each request from what it reads: phase 1
// finds "[USER] <the entries' facts>", phase 2 writes them into USER.md
// (under the template's or the root's heading) and then says it is done.
type scopedEnv struct {
	*env
	// fail, when it returns true for a phase-1 prompt, makes that
	// analysis empty (a failure that counts against the batch).
	fail func(prompt string) bool
}

func newScopedEnv(t *testing.T) *scopedEnv {
	t.Helper()
	e := &scopedEnv{env: newEnv(t)}
	e.srv.SetResponder(e.respond)
	return e
}

// facts are the "- …" lines of a prompt's history section.
func facts(prompt string) []string {
	var out []string
	for line := range strings.Lines(prompt) {
		if i := strings.Index(line, "] - "); i >= 0 {
			out = append(out, strings.TrimSpace(line[i+4:]))
		}
	}
	return out
}

func (e *scopedEnv) respond(req llmtest.Request) llmtest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if len(req.Tools) == 0 { // phase 1
		if e.fail != nil && e.fail(last.Content) {
			return llmtest.Text("")
		}
		var b strings.Builder
		for _, f := range facts(last.Content) {
			fmt.Fprintf(&b, "[USER] %s\n", f)
		}
		return llmtest.Text(b.String())
	}
	if last.Role == llm.RoleTool {
		return llmtest.Text("Done.")
	}
	var lines []string
	for line := range strings.Lines(last.Content) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "[USER] "); ok {
			lines = append(lines, "- "+rest+"\n")
		}
	}
	heading := "# Users\n"
	if strings.Contains(last.Content, initUser) {
		heading = "# User\n"
	}
	return calls(editCall("USER.md", heading, heading+strings.Join(lines, "")))
}

func (e *scopedEnv) dreamer(cfg Config) *Dreamer {
	e.t.Helper()
	cfg.Workspace = e.ws
	d, err := New(cfg, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs)})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// add appends an entry of a scope, as the consolidator does.
func (e *scopedEnv) add(scope audience.Scope, fact string) history.Entry {
	e.t.Helper()
	en, err := e.hist.AppendIn(scope, "- "+fact, "slack:C1")
	if err != nil {
		e.t.Fatal(err)
	}
	return en
}

// analyses are the phase-1 prompts the model received, in order.
func (e *scopedEnv) analyses() []string {
	var out []string
	for _, r := range e.srv.Requests() {
		if len(r.Tools) == 0 {
			out = append(out, r.Messages[len(r.Messages)-1].Content)
		}
	}
	return out
}

// A run visits the scopes with unread entries, the oldest unread first;
// each batch holds only its scope's entries and is analysed with that
// scope's files; its edits land in that scope's folder (made from the
// template on first use), and its commit holds that scope's paths alone.
func TestRunWalksTheScopes(t *testing.T) {
	e := newScopedEnv(t)
	e.add(audience.Default, "operator likes tea")
	e.add(team, "team ships on fridays")
	e.add(person, "Ana salary band is K7Q2Z9")
	e.add(team, "team uses go")
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	var order []audience.Scope
	for _, s := range rep.Scopes {
		order = append(order, s.Scope)
	}
	if want := []audience.Scope{audience.Default, team, person}; !slices.Equal(order, want) {
		t.Errorf("scopes visited %v, want %v (the oldest unread first)", order, want)
	}
	an := e.analyses()
	if len(an) != 3 {
		t.Fatalf("%d analyses, want 3", len(an))
	}
	for i, want := range [][]string{{"operator likes tea"}, {"team ships on fridays", "team uses go"}, {"Ana salary band is K7Q2Z9"}} {
		if got := facts(an[i]); !slices.Equal(got, want) {
			t.Errorf("analysis %d read %q, want %q", i, got, want)
		}
	}
	if !strings.Contains(an[0], "Name: Ana.") || strings.Contains(an[1], "Name: Ana.") || !strings.Contains(an[1], "# Users\n") {
		t.Errorf("phase 1 did not read each scope's own files:\n%s\n---\n%s", an[0], an[1])
	}
	if got := e.read("USER.md"); !strings.Contains(got, "operator likes tea") || strings.Contains(got, "K7Q2Z9") || strings.Contains(got, "fridays") {
		t.Errorf("root USER.md = %q", got)
	}
	if got := e.read("scopes/team-slack-t1/USER.md"); !strings.Contains(got, "fridays") || strings.Contains(got, "K7Q2Z9") || strings.Contains(got, "likes tea") {
		t.Errorf("team USER.md = %q", got)
	}
	if got := e.read("scopes/person-slack-t1-u2/USER.md"); !strings.Contains(got, "K7Q2Z9") {
		t.Errorf("person USER.md = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "scopes", string(team), "AGENTS.md")); err == nil {
		t.Error("AGENTS.md was copied into a scope folder")
	}
	// Each commit holds one scope's paths; Dream's name no person.
	dreams := 0
	for _, c := range e.commits() {
		scope, _ := audience.ScopeOfPath(firstOr(c.changed, ""))
		if !c.inScope(scope) {
			t.Errorf("commit %q changed %v: more than one scope", c.c.Subject, c.changed)
		}
		if strings.HasPrefix(c.c.Subject, SubjectPrefix) {
			dreams++
			if strings.Contains(c.c.Subject, "Ana") || strings.Contains(c.c.Subject, "scope") {
				t.Errorf("subject %q", c.c.Subject)
			}
			if want := (stepNote{Scope: scope}).trailers(); !strings.Contains(c.c.Body, want) {
				t.Errorf("commit %q body ends %q, want the trailer %q", c.c.Subject, lastLine(c.c.Body), want)
			}
		}
	}
	if dreams != 3 {
		t.Errorf("%d Dream commits, want one per scope", dreams)
	}
	r := e.record()
	for _, s := range []audience.Scope{audience.Default, team, person} {
		if r.Scopes[s] == nil || r.Scopes[s].Cursor != 4 || r.Scopes[s].LastRun == nil {
			t.Errorf("scope %q progress %+v", s, r.Scopes[s])
		}
	}
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("frontier %d, want 4", c)
	}
	e.checkWire()
}

// loggedCommit is a commit and the paths it changed.
type loggedCommit struct {
	c       gitstore.Commit
	changed []string
}

// commits lists the memory repository's commits, newest first.
func (e *scopedEnv) commits() []loggedCommit {
	e.t.Helper()
	var out []loggedCommit
	for _, c := range e.log(0) {
		_, diff, err := e.repo.Show(c.SHA, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, loggedCommit{c: c, changed: diffPaths(diff)})
	}
	return out
}

// inScope reports whether every path the commit changed is the scope's.
func (c loggedCommit) inScope(s audience.Scope) bool {
	for _, p := range c.changed {
		if got, ok := audience.ScopeOfPath(p); !ok || got != s {
			return false
		}
	}
	return true
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// One scope's failing batch never holds back another's: the team's batch
// fails (and is skipped after MaxFailures, recorded in the team's own
// history), while the person's entries, later ones included, are read.
func TestFailingScopeDoesNotHoldBackAnother(t *testing.T) {
	e := newScopedEnv(t)
	e.fail = func(prompt string) bool { return strings.Contains(prompt, "team secret plan") }
	e.add(team, "team secret plan")
	e.add(person, "person fact 1")
	d := e.dreamer(Config{MaxFailures: 2})
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if !errors.Is(err, ErrRunFailed) || rep.Outcome != OutcomeFailed || rep.Failures != 1 {
		t.Fatalf("run 1: %+v, %v", rep, err)
	}
	if rep.Batches != 1 || !strings.Contains(e.read("scopes/person-slack-t1-u2/USER.md"), "person fact 1") {
		t.Errorf("the person's batch was held back: %+v", rep)
	}
	r := e.record()
	if r.Scopes[team].Cursor != 0 || r.Scopes[team].Failures == nil || r.Scopes[person].Cursor != 2 || r.Scopes[person].Failures != nil {
		t.Errorf("after run 1: team %+v, person %+v", r.Scopes[team], r.Scopes[person])
	}
	e.add(person, "person fact 2")
	rep, err = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if !errors.Is(err, ErrBatchSkipped) || rep.Outcome != OutcomeSkipped {
		t.Fatalf("run 2: %+v, %v", rep, err)
	}
	if !strings.Contains(e.read("scopes/person-slack-t1-u2/USER.md"), "person fact 2") {
		t.Error("the person's new entry was held back by the team's failure")
	}
	var skip history.Entry
	for _, en := range e.hist.all(t) {
		if strings.HasPrefix(en.Content, "[DREAM-SKIPPED]") {
			skip = en
		}
	}
	if skip.Scope != team {
		t.Errorf("the skip is recorded as %+v, want an entry of the team's scope", skip)
	}
	r = e.record()
	if r.Scopes[team].Cursor < skip.Cursor || len(r.Scopes[team].Skips) != 1 || len(r.Scopes[person].Skips) != 0 {
		t.Errorf("after run 2: team %+v, person %+v", r.Scopes[team], r.Scopes[person])
	}
	if c := e.hist.cursor(t); c != skip.Cursor {
		t.Errorf("frontier %d, want %d (every scope has read up to the skip record)", c, skip.Cursor)
	}
	st := d.Status(OnlyScopes(person))
	if len(st.Skips) != 0 || st.Last == nil || st.Last.Outcome != OutcomeCompleted || len(st.Scopes) != 1 {
		t.Errorf("the person's status shows the team's: %+v", st)
	}
	if st := d.Status(OnlyScopes(team)); len(st.Skips) != 1 || st.Last == nil || st.Last.Outcome != OutcomeSkipped {
		t.Errorf("the team's status: %+v", st)
	}
}

// A scope with nothing unread moves its cursor up with the others, so the
// frontier (memory/.dream_cursor) and compaction never wait for a quiet
// scope.
func TestQuietScopeDoesNotHoldTheFrontier(t *testing.T) {
	e := newScopedEnv(t)
	e.add(person, "person said something once")
	d := e.dreamer(Config{MaxEntries: 5})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		e.add(team, fmt.Sprintf("team fact %d", i))
	}
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Backlog != 0 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	r := e.record()
	if r.Scopes[person].Cursor != 13 || r.Scopes[audience.Default].Cursor != 13 || r.Frontier != 13 {
		t.Errorf("ledger: frontier %d, person %d, default %d; want all 13", r.Frontier, r.Scopes[person].Cursor, r.Scopes[audience.Default].Cursor)
	}
	if n, err := e.hist.Len(); err != nil || n != 5 {
		t.Errorf("history holds %d entries after compaction (%v), want 5", n, err)
	}
	if rep.Dropped == 0 {
		t.Error("nothing compacted")
	}
}

// The run's batch bound applies across scopes, one batch per scope in
// turn: a scope with a huge backlog does not starve the others.
func TestRunIsFairAcrossScopes(t *testing.T) {
	e := newScopedEnv(t)
	for i := range 10 {
		e.add(team, fmt.Sprintf("team fact %d", i))
	}
	e.add(person, "person fact")
	e.add(audience.Default, "operator fact")
	rep, err := e.dreamer(Config{MaxBatchSize: 2, MaxBatchesPerRun: 4}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	var batches []string
	for _, a := range e.analyses() {
		batches = append(batches, strings.Join(facts(a), "+"))
	}
	want := []string{"team fact 0+team fact 1", "person fact", "operator fact", "team fact 2+team fact 3"}
	if !slices.Equal(batches, want) {
		t.Errorf("batches %q, want %q", batches, want)
	}
	if rep.Batches != 4 || rep.Backlog != 6 {
		t.Errorf("report: %d batches, backlog %d; want 4, 6", rep.Batches, rep.Backlog)
	}
	r := e.record()
	if r.Scopes[team].Cursor != 4 || r.Frontier != 4 {
		t.Errorf("team cursor %d, frontier %d; want 4, 4", r.Scopes[team].Cursor, r.Frontier)
	}
}

// A run limited to some scopes (a /dream in a DM: the team and that
// person) reads and reports those alone; the others wait for a run that
// covers them.
func TestRunOfSomeScopes(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team fact")
	e.add(person, "person fact")
	d := e.dreamer(Config{})
	rep, err := d.Run(t.Context(), TriggerManual, OnlyScopes(person), nil)
	if err != nil || len(rep.Scopes) != 1 || rep.Scopes[0].Scope != person || rep.Backlog != 0 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	if an := e.analyses(); len(an) != 1 || strings.Contains(an[0], "team fact") {
		t.Errorf("analyses %q", an)
	}
	if c := e.hist.cursor(t); c != 0 {
		t.Errorf("frontier %d: the team's unread entry was passed", c)
	}
	if st := d.Status(OnlyScopes(team)); st.Backlog != 1 || st.Last != nil {
		t.Errorf("team status %+v", st)
	}
	rep, err = d.Run(t.Context(), TriggerManual, OnlyScopes(), nil)
	if err != nil || rep.Outcome != OutcomeNothingNew || len(e.analyses()) != 1 {
		t.Errorf("a run of no scope: %+v, %v", rep, err)
	}
	if rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil || rep.Batches != 1 {
		t.Errorf("the cron run: %+v, %v", rep, err)
	}
	if c := e.hist.cursor(t); c != 2 {
		t.Errorf("frontier %d, want 2", c)
	}
}

// Phase 2's file tools are rooted at the scope's folder: the root's files
// and another scope's are out of reach, by any spelling.
func TestPhase2ReachesOnlyItsScope(t *testing.T) {
	e := newScopedEnv(t)
	e.add(person, "a private fact")
	writeFile(t, e.ws, "scopes/team-slack-t1/USER.md", "# Team user\n")
	rootUser := e.read("USER.md")
	var results []string
	e.srv.SetResponder(func(req llmtest.Request) llmtest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case len(req.Tools) == 0:
			return llmtest.Text("[USER] a private fact")
		case last.Role == llm.RoleTool:
			for _, m := range req.Messages {
				if m.Role == llm.RoleTool {
					results = append(results, m.Content)
				}
			}
			if len(results) < 4 {
				return calls(editCall("../scopes/team-slack-t1/USER.md", "# Team user\n", "# Team user\n- a private fact\n"))
			}
			return llmtest.Text("Done.")
		}
		return calls(
			editCall("../../USER.md", "# User\n", "# User\n- a private fact\n"),
			editCall("/USER.md", "# User\n", "# User\n- a private fact\n"),
			readCall("../../memory/history.jsonl"),
		)
	})
	if _, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	if got := e.read("USER.md"); got != rootUser {
		t.Errorf("root USER.md changed: %q", got)
	}
	if got := e.read("scopes/team-slack-t1/USER.md"); got != "# Team user\n" {
		t.Errorf("the team's USER.md changed: %q", got)
	}
	for _, r := range results {
		if strings.Contains(r, "a private fact\"") || strings.Contains(r, "cursor") {
			t.Errorf("a tool result reached outside the scope: %q", r)
		}
	}
	if len(results) < 4 {
		t.Errorf("tool results %q", results)
	}
}

func readCall(path string) llm.ToolCall {
	return llm.ToolCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path": %q}`, path)}
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	testkit.WriteFile(t, dir, rel, content)
}

// Hand edits are committed per scope before that scope's Dream, each
// commit holding its scope's paths; another scope's hand edits wait for
// that scope's own Dream.
func TestHandEditsCommittedPerScope(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team fact")
	e.add(person, "person fact")
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.ws, "scopes/team-slack-t1/SOUL.md", "# Soul\n- edited by hand in the team\n")
	writeFile(t, e.ws, "scopes/person-slack-t1-u2/SOUL.md", "# Soul\n- edited by hand in the DM\n")
	e.add(team, "team fact 2")
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	log := e.commits()
	if log[0].c.Subject == gitstore.ManualSubject || log[1].c.Subject != gitstore.ManualSubject {
		t.Fatalf("commits: %q, %q", log[0].c.Subject, log[1].c.Subject)
	}
	if !slices.Equal(log[1].changed, []string{"scopes/team-slack-t1/SOUL.md"}) || !log[0].inScope(team) {
		t.Errorf("manual commit changed %v, Dream's %v", log[1].changed, log[0].changed)
	}
	if st, _ := e.repo.Status(nil); len(st.Files) != 1 || st.Files[0].Path != "scopes/person-slack-t1-u2/SOUL.md" {
		t.Errorf("uncommitted after the team's Dream: %+v", st.Files)
	}
}

// A restore for some scopes restores their files alone, and a commit of
// another scope does not exist for it.
func TestRestoreOfSomeScopes(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team fact")
	e.add(person, "person fact")
	d := e.dreamer(Config{})
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || len(rep.Scopes) != 2 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	teamCommit, personCommit := rep.Scopes[0].Commit, rep.Scopes[1].Commit
	if _, err := d.Restore(teamCommit, OnlyScopes(person), RestoreOptions{}); !errors.Is(err, ErrNotInScopes) || !errors.Is(err, gitstore.ErrUnknownRevision) {
		t.Errorf("restoring the team's commit for the person: %v", err)
	}
	if _, err := d.Restore(teamCommit, Scopes{}, RestoreOptions{}); !errors.Is(err, ErrNotInScopes) {
		t.Errorf("restoring for no scope: %v", err)
	}
	res, err := d.Restore(teamCommit, OnlyScopes(team, person), RestoreOptions{})
	if err != nil || !slices.Equal(res.Files, []string{"scopes/team-slack-t1/USER.md"}) {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if strings.Contains(e.read("scopes/team-slack-t1/USER.md"), "team fact") || !strings.Contains(e.read("scopes/person-slack-t1-u2/USER.md"), "person fact") {
		t.Error("the restore undid the wrong scope's edits")
	}
	if st := d.Status(OnlyScopes(team)); st.Last == nil || st.Last.UndoneBy != res.Revert.Short {
		t.Errorf("team status after the restore: %+v", st.Last)
	}
	if st := d.Status(OnlyScopes(person)); st.Last == nil || st.Last.UndoneBy != "" || st.Last.Commit != personCommit {
		t.Errorf("person status after the team's restore: %+v", st.Last)
	}
}

// A workspace of one scope reports as before: one ScopeReport, the
// default's, equal to the sums, and its commit bodies carry no trailer.
func TestDefaultScopeReportsAsBefore(t *testing.T) {
	e := newScopedEnv(t)
	e.add(audience.Default, "operator fact")
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || len(rep.Scopes) != 1 || rep.Scopes[0].Scope != audience.Default {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	sr := rep.Scopes[0].Report
	if sr.Commit != rep.Commit || sr.Entries != rep.Entries || sr.Changes != rep.Changes || sr.Outcome != rep.Outcome {
		t.Errorf("scope report %+v differs from the run's %+v", sr, rep)
	}
	if body := e.commits()[0].c.Body; strings.Contains(body, "Scope:") {
		t.Errorf("a default-scope commit body names a scope: %q", body)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "scopes")); err == nil {
		t.Error("a scopes/ folder was made for the default scope")
	}
}

// Through the real memory repository, tracking every scope folder's memory
// files: a scope's first Dream commits the template's files first, then
// its own edits, each commit holding that scope's paths alone; a restore
// for the scope undoes its edits and nothing of the root's.
func TestScopesThroughTheMemoryRepository(t *testing.T) {
	e := newScopedEnv(t)
	repo, err := gitstore.Open(e.ws, gitstore.Options{Tracked: workspace.TrackedFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir})
	if err != nil {
		t.Fatal(err)
	}
	e.add(audience.Default, "operator fact")
	e.add(team, "team fact")
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: repo, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || len(rep.Scopes) != 2 || rep.Scopes[1].Commit == "" {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	cs, err := repo.Log(10, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, c := range cs {
		subjects = append(subjects, c.Subject)
		_, diff, err := repo.Show(c.SHA, nil)
		if err != nil {
			t.Fatal(err)
		}
		scopes := map[audience.Scope]bool{}
		for _, f := range diff.Files {
			s, _ := audience.ScopeOfPath(f.Path)
			scopes[s] = true
		}
		if len(scopes) > 1 {
			t.Errorf("commit %q changed %+v: more than one scope", c.Subject, diff.Files)
		}
	}
	want := []string{"dream: 1 change from history 2-2", ScopeCreatedPrefix + string(team), "dream: 1 change from history 1-1"}
	if len(subjects) < 3 || !slices.Equal(subjects[:3], want) {
		t.Errorf("commits %q, want %q first", subjects, want)
	}
	if !strings.Contains(cs[0].Body, "\n\nScope: team-slack-t1\n") {
		t.Errorf("the team's commit body ends %q", lastLine(cs[0].Body))
	}
	res, err := d.Restore(rep.Scopes[1].Commit, OnlyScopes(team), RestoreOptions{})
	if err != nil || !slices.Equal(res.Files, []string{"scopes/team-slack-t1/USER.md"}) {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if strings.Contains(e.read("scopes/team-slack-t1/USER.md"), "team fact") || !strings.Contains(e.read("USER.md"), "operator fact") {
		t.Error("the team's restore undid the wrong edits")
	}
	if _, err := d.Restore(rep.Scopes[0].Commit, OnlyScopes(team), RestoreOptions{}); !errors.Is(err, gitstore.ErrUnknownRevision) {
		t.Errorf("restoring the root's commit for the team: %v", err)
	}
	if st, err := repo.Status(nil); err != nil || !st.Empty() {
		t.Errorf("files differ from HEAD: %+v, %v", st.Files, err)
	}
}
