package dream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// oneEditModel is a fake model that analyses a batch into fixed findings
// and then, as small local models do, makes one edit per call: each call
// adds the next finding of its prompt that the files do not show yet, by
// inserting a line under the file's heading; when none is left it answers
// "Done.". fail, when set, may replace a phase-2 reply (the number of edits
// made in this conversation so far is given).
type oneEditModel struct {
	findings []string // "[TAG] text"
	fail     func(editsSoFar int) (llmtest.Reply, bool)
	// readFirst makes it read the file before each edit (two calls a
	// finding).
	readFirst bool
	// literal makes it apply every finding it is given, even one whose
	// fact the file already holds (as a literal model does).
	literal bool

	mu       sync.Mutex
	analyses int
}

var headings = map[string][2]string{
	"[USER] ":   {"USER.md", "# User\n"},
	"[SOUL] ":   {"SOUL.md", "# Soul\n"},
	"[MEMORY] ": {"memory/MEMORY.md", "# Memory\n"},
}

func (m *oneEditModel) respond(r llmtest.Request) llmtest.Reply {
	user := r.Messages[1].Content
	if len(r.Tools) == 0 {
		m.mu.Lock()
		m.analyses++
		m.mu.Unlock()
		return llmtest.Text(strings.Join(m.findings, "\n"))
	}
	edits := 0
	for _, msg := range r.Messages {
		if msg.Role == llm.RoleAssistant && len(msg.ToolCalls) > 0 && msg.ToolCalls[0].Name == "edit_file" {
			edits++
		}
	}
	last := r.Messages[len(r.Messages)-1]
	readNext := m.readFirst && (last.Role == llm.RoleUser || r.Messages[len(r.Messages)-2].ToolCalls[0].Name == "edit_file")
	if m.fail != nil {
		if reply, ok := m.fail(edits); ok {
			return reply
		}
	}
	list, files, _ := strings.Cut(strings.TrimPrefix(user, "## Findings to apply\n"), "\n## Current memory files")
	var todo []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		for tag := range headings {
			if fact, ok := strings.CutPrefix(line, tag); ok && (m.literal || !strings.Contains(files, "- "+fact+"\n")) {
				todo = append(todo, line)
			}
		}
	}
	if edits >= len(todo) {
		return llmtest.Text("Done.")
	}
	line := todo[edits]
	for tag, h := range headings {
		if fact, ok := strings.CutPrefix(line, tag); ok {
			if readNext {
				return calls(llm.ToolCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":%q}`, h[0])})
			}
			return calls(editCall(h[0], h[1], h[1]+"- "+fact+"\n"))
		}
	}
	return llmtest.Text("Done.")
}

func (m *oneEditModel) analysisCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.analyses
}

// plantedFindings are n findings spread over the three files.
func plantedFindings(n int) []string {
	tags := []string{"[USER] ", "[MEMORY] ", "[SOUL] "}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%sfact number %02d", tags[i%3], i+1)
	}
	return out
}

// checkPlanted asserts that every finding is in its file exactly once.
func (e *env) checkPlanted(findings []string) {
	e.t.Helper()
	for _, f := range findings {
		for tag, h := range headings {
			if fact, ok := strings.CutPrefix(f, tag); ok {
				if n := factCount(e.read(h[0]), fact); n != 1 {
					e.t.Errorf("%s holds %q %d times, want once", h[0], fact, n)
				}
			}
		}
	}
}

// TestOneEditPerCallAppliesEveryFinding: a model that makes one edit per
// call gets a budget that grows with the findings, so 25 findings in one
// batch are all applied in one run, one commit (with maxIterations 10 they
// used to fail the batch three times and lose it).
func TestOneEditPerCallAppliesEveryFinding(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(25)}
	e.srv.SetResponder(m.respond)
	rep, err := e.dreamer(Config{MaxIterations: 10}).Run(t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("outcome %s, err %v", rep.Outcome, err)
	}
	e.checkPlanted(m.findings)
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d, want 4", c)
	}
	cs := e.log(10)
	if len(cs) != 2 || cs[0].Subject != "dream: 25 changes from history 1-4" {
		t.Errorf("commits = %+v, want one Dream commit of the 25 facts", cs)
	}
	if rep.Findings != 25 || rep.Changes != 25 || rep.Left != 0 {
		t.Errorf("report = %+v", rep)
	}
	for _, en := range e.hist.all(t) {
		if strings.HasPrefix(en.Content, "[DREAM-SKIPPED]") {
			t.Errorf("a batch was skipped: %q", en.Content)
		}
	}
	e.checkWire()
}

// TestStoppedEditingKeepsWhatItApplied: when phase 2 stops part-way (here
// the model rejects a request after a few edits of each run's second
// chunk), the chunks it completed are committed, the findings left are
// recorded and applied by the next runs without a new analysis, and the
// failures of a run that made progress never count towards a skip.
func TestStoppedEditingKeepsWhatItApplied(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	var chunk atomic.Int32 // phase-2 conversations in the current run
	m := &oneEditModel{findings: plantedFindings(25)}
	m.fail = func(edits int) (llmtest.Reply, bool) {
		if edits == 0 {
			chunk.Add(1)
		}
		if chunk.Load() == 2 && edits == 3 {
			return llmtest.Status(400, ""), true
		}
		return llmtest.Reply{}, false
	}
	e.srv.SetResponder(m.respond)
	d := e.dreamer(Config{MaxIterations: 10})

	// Run 1: chunk 1 (10 findings) completes, chunk 2 stops after 3 edits.
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomePartial || !errors.Is(err, ErrRunFailed) || rep.Left != 15 || rep.Failures != 0 {
		t.Fatalf("run 1: outcome %s, left %d, failures %d, err %v", rep.Outcome, rep.Left, rep.Failures, err)
	}
	cs := e.log(10)
	if len(cs) != 2 || cs[0].Subject != "dream: 10 changes from history 1-4 (partial: 15 of 25 findings left)" {
		t.Fatalf("commits after run 1 = %+v", cs)
	}
	e.checkPlanted(m.findings[:10])
	for _, f := range m.findings[10:13] {
		_, fact, _ := strings.Cut(f, "] ")
		if strings.Contains(e.read("USER.md")+e.read("SOUL.md")+e.read("memory/MEMORY.md"), fact) {
			t.Errorf("the stopped chunk's edit %q is still on disk", fact)
		}
	}
	if st, err := e.repo.Status(nil); err != nil || !st.Empty() {
		t.Errorf("files differ from HEAD after a partial run: %+v %v", st, err)
	}
	if c := e.hist.cursor(t); c != 0 {
		t.Errorf("cursor = %d after a partial run, want 0", c)
	}
	if rep.Left != 15 || rep.Commit != cs[0].Short {
		t.Errorf("report: left %d, commit %q; want 15 and %q", rep.Left, rep.Commit, cs[0].Short)
	}
	if l := d.Status(AllScopes()).Last; l == nil || l.Left != 15 || l.First != 1 || l.Last != 4 {
		t.Errorf("status' last run = %+v, want 15 findings of history 1-4 left", l)
	}

	// Run 2 and 3 go on from the findings left, with no new analysis.
	for run := 2; run <= 3; run++ {
		chunk.Store(0)
		rep, err = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
		if m.analysisCalls() != 1 {
			t.Fatalf("run %d: %d analysis calls, want only the first run's", run, m.analysisCalls())
		}
		t.Logf("run %d: %s, left %d, err %v", run, rep.Outcome, rep.Left, err)
	}
	if rep.Outcome != OutcomeCompleted || err != nil {
		t.Fatalf("run 3: outcome %s, err %v", rep.Outcome, err)
	}
	e.checkPlanted(m.findings)
	if c := e.hist.cursor(t); c != 4 {
		t.Errorf("cursor = %d, want 4", c)
	}
	for _, en := range e.hist.all(t) {
		if strings.HasPrefix(en.Content, "[DREAM-SKIPPED]") {
			t.Errorf("a batch was skipped although every run made progress: %q", en.Content)
		}
	}
	if p := e.progress(); p.Pending != nil || p.Failures != nil {
		t.Errorf("progress after the batch completed: pending %+v, failures %+v", p.Pending, p.Failures)
	}
	e.checkWire()
}

// TestSkipNamesWhatItSkipped: a skip, when it happens after repeated
// failures without progress, says which entries in /status and /dream-log,
// and its history record keeps the findings never applied.
func TestSkipNamesWhatItSkipped(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	broken := false
	m := &oneEditModel{findings: plantedFindings(12)}
	var chunk atomic.Int32
	m.fail = func(edits int) (llmtest.Reply, bool) {
		if edits == 0 {
			chunk.Add(1)
		}
		if broken || chunk.Load() == 2 {
			return llmtest.Status(400, ""), true
		}
		return llmtest.Reply{}, false
	}
	e.srv.SetResponder(m.respond)
	d := e.dreamer(Config{})
	if rep, _ := d.Run(t.Context(), TriggerCron, AllScopes(), nil); rep.Outcome != OutcomePartial || rep.Left != 2 {
		t.Fatalf("run 1: %+v", rep)
	}
	broken = true
	var rep Report
	var err error
	for range 3 {
		rep, err = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	}
	if rep.Outcome != OutcomeSkipped || !errors.Is(err, ErrBatchSkipped) {
		t.Fatalf("run 4: outcome %s, err %v", rep.Outcome, err)
	}
	all := e.hist.all(t)
	rec := all[len(all)-1].Content
	if !strings.HasPrefix(rec, "[DREAM-SKIPPED] history entries 1-4") || !strings.Contains(rec, "2 of its findings were not applied") ||
		!strings.Contains(rec, m.findings[10]) || !strings.Contains(rec, m.findings[11]) {
		t.Errorf("skip record = %q", rec)
	}
	st := d.Status(AllScopes())
	if len(st.Skips) != 1 || st.Skips[0].First != 1 || st.Skips[0].Last != 4 || st.Skips[0].Findings != 2 {
		t.Errorf("status' skips = %+v, want history 1-4 with 2 findings not applied", st.Skips)
	}
	if rep.BatchFirst != 1 || rep.BatchLast != 4 {
		t.Errorf("skip report: batch %d-%d", rep.BatchFirst, rep.BatchLast)
	}
}

// TestBacklogDrains: with more unread entries than one batch, a run goes on
// with the next batches up to MaxBatchesPerRun, and says what is left.
func TestBacklogDrains(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 50, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Reply {
		if len(r.Tools) > 0 {
			return llmtest.Text("Done.")
		}
		// A finding per batch, named by the batch's first entry.
		first := strings.SplitN(r.Messages[1].Content, "\n", 3)[1]
		return llmtest.Text("[MEMORY] batch starting " + first[strings.Index(first, "] ")+2:])
	})
	var seen []string
	d := e.dreamer(Config{MaxBatchSize: 20, MaxBatchesPerRun: 2})
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), func(s string) { seen = append(seen, s) })
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("outcome %s, err %v", rep.Outcome, err)
	}
	if rep.Batches != 2 || rep.Entries != 40 || rep.First != 1 || rep.Last != 40 || rep.Backlog != 10 {
		t.Errorf("report = %+v", rep)
	}
	if c := e.hist.cursor(t); c != 40 {
		t.Errorf("cursor = %d, want 40", c)
	}
	if n := len(e.srv.Requests()); n != 4 {
		t.Errorf("requests = %d, want 2 per batch", n)
	}
	if st := d.Status(AllScopes()); st.Backlog != 10 {
		t.Errorf("status' backlog = %d, want 10", st.Backlog)
	}
	if !slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, "reading 20 history entries") }) {
		t.Errorf("progress = %q", seen)
	}

	// The next run reads the rest and stops when nothing is left.
	rep, err = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted || rep.Batches != 1 || rep.Entries != 10 || rep.Backlog != 0 {
		t.Errorf("second run: %+v, %v", rep, err)
	}
}

// TestBacklogStopsAtTokenLimit: a run does not start another batch once it
// has used MaxTokensPerRun tokens.
func TestBacklogStopsAtTokenLimit(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 30, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("[SKIP]") })
	rep, err := e.dreamer(Config{MaxBatchSize: 10, MaxTokensPerRun: 1}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Batches != 1 || rep.Backlog != 20 {
		t.Errorf("report %+v, err %v", rep, err)
	}
	if w := e.logs.Find(0, "token limit of the run reached"); len(w) != 1 {
		t.Errorf("log lines = %+v", w)
	}
}

// TestLaterBatchFailureKeepsEarlierOnes: a failure in the second batch of a
// run leaves the first one's commit and cursor, and the reply says both.
func TestLaterBatchFailureKeepsEarlierOnes(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 6, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.Push(
		llmtest.Text("[USER] likes tea"),
		calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")),
		llmtest.Text("Done."),
		llmtest.Status(400, ""),
	)
	rep, err := e.dreamer(Config{MaxBatchSize: 3}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomeFailed || rep.Batches != 1 || rep.Commit == "" || !errors.Is(err, ErrRunFailed) {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if c := e.hist.cursor(t); c != 3 {
		t.Errorf("cursor = %d, want 3", c)
	}
	if rep.EntriesDone != 3 || rep.Changes != 1 || rep.Failures != 1 || rep.MaxFailures != 3 || rep.Reason == "" {
		t.Errorf("report = %+v, want the first batch's 3 entries and change, and the second's failure (1 of 3)", rep)
	}
}

// TestPublicReasonHidesOperatorDetail: a failed model call's reason names
// what the operator should check; its public variant does not.
func TestPublicReasonHidesOperatorDetail(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	e.srv.Push(llmtest.Status(401, ""))
	rep, _ := e.dreamer(Config{}).Run(t.Context(), TriggerManual, AllScopes(), nil)
	if !strings.Contains(rep.Reason, "llm.apiKey") {
		t.Errorf("reason = %q, want the operator's hint", rep.Reason)
	}
	pub := rep.PublicReason
	if strings.Contains(pub, "llm.apiKey") || strings.Contains(pub, "401") || !strings.Contains(pub, "the operator has been told") {
		t.Errorf("public reason = %q", pub)
	}
}

// TestModelThatReadsBeforeEachEdit: a model that reads the file before
// every edit needs twice the calls the budget allows for a chunk; the
// chunk is retried in smaller ones instead of failing the batch.
func TestModelThatReadsBeforeEachEdit(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 3, func(i int) string { return fmt.Sprintf("- facts told in turn %d", i) })
	m := &oneEditModel{findings: plantedFindings(12), readFirst: true}
	e.srv.SetResponder(m.respond)
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("outcome %s, err %v", rep.Outcome, err)
	}
	e.checkPlanted(m.findings)
	if w := e.logs.Find(0, "retrying it in smaller chunks"); len(w) == 0 {
		t.Error("no chunk was split: the test did not reach the budget")
	}
}

// TestBacklogStopsBeforeCallersDeadline: a run does not start a batch its
// caller's deadline (a /dream's) would cut short.
func TestBacklogStopsBeforeCallersDeadline(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 30, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("[SKIP]") })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	rep, err := e.dreamer(Config{MaxBatchSize: 10, Timeout: 20 * time.Minute}).Run(ctx, TriggerManual, AllScopes(), nil)
	if err != nil || rep.Batches != 1 || rep.Backlog != 20 {
		t.Errorf("report %+v, err %v", rep, err)
	}
}
