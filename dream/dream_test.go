package dream

import (
	"context"
	"errors"
	"fmt"
	"github.com/dreamgate/dreamgate/memory/memline"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func TestRunHappyPath(t *testing.T) {
	e := newEnv(t)
	e.now = func() time.Time { return time.Date(2026, 11, 26, 10, 0, 0, 0, time.Local) }
	e.hist.seed(t, 0, 3, func(i int) string {
		return []string{"", "- User said hello", "- User prefers tea over coffee", "- Weather was rainy"}[i]
	})
	e.srv.Push(
		llmtest.Text("[USER] prefers tea over coffee\n[SKIP]"),
		calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Prefers tea over coffee.\n")),
		llmtest.Text("I added the tea preference to USER.md and also rewrote SOUL.md."),
	)
	var progress []string
	d := e.dreamer(Config{})
	rep, err := d.Run(t.Context(), TriggerManual, AllScopes(), func(s string) { progress = append(progress, s) })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	top := checkHappyFiles(t, e)
	checkHappyReport(t, rep, top, progress)
	checkHappyRequests(t, e)

	st := d.Status(AllScopes())
	if st.Running || st.Last == nil || st.Last.Outcome != OutcomeCompleted || st.Last.Commit != top.Short {
		t.Errorf("status = %+v", st)
	}
}

// checkHappyFiles checks the memory files, the cursor and the commit
// TestRunHappyPath's Dream left, and returns that commit.
func checkHappyFiles(t *testing.T, e *env) gitstore.Commit {
	t.Helper()
	// The new line is dated today and traced to the entry that said it;
	// the hand-written line above it is left as it was.
	if got := noIDs(e.read("USER.md")); got != "# User\n\n- Name: Ana.\n- Prefers tea over coffee. <!-- durable 2026-11-26 src:2 -->\n" {
		t.Errorf("USER.md = %q", got)
	}
	if l, _ := memline.Parse(e.lineOf("USER.md", "tea")); l.ID == "" {
		t.Errorf("the new line has no id: %q", e.lineOf("USER.md", "tea"))
	}
	if got := e.read("SOUL.md"); got != initSoul {
		t.Errorf("SOUL.md changed: %q", got)
	}
	if c := e.hist.cursor(t); c != 3 {
		t.Errorf(".dream_cursor = %d, want 3", c)
	}
	commits := e.log(10)
	if len(commits) != 2 {
		t.Fatalf("commits = %+v, want the Dream commit on top of init", commits)
	}
	top := commits[0]
	if top.Subject != "dream: 1 change from history 1-3" {
		t.Errorf("subject = %q", top.Subject)
	}
	// The body is the real diff, never the model's narration.
	for _, want := range []string{"USER.md: +1 -0", "+- Prefers tea over coffee. <!--"} {
		if !strings.Contains(top.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, top.Body)
		}
	}
	if strings.Contains(top.Body, "rewrote SOUL.md") || strings.Contains(top.Body, "I added") {
		t.Errorf("body carries the model's account:\n%s", top.Body)
	}
	if st, err := e.repo.Status(nil); err != nil || !st.Empty() {
		t.Errorf("working files differ from HEAD after the run: %+v, %v", st, err)
	}
	return top
}

// checkHappyReport checks the report and the progress lines of
// TestRunHappyPath's Dream, whose commit is top.
func checkHappyReport(t *testing.T, rep Report, top gitstore.Commit, progress []string) {
	t.Helper()
	want := Report{Trigger: TriggerManual, Outcome: OutcomeCompleted, Entries: 3, First: 1, Last: 3,
		Findings: 1, Changes: 1, Commit: top.Short, Calls: 3}
	if rep.Outcome != want.Outcome || rep.Entries != want.Entries || rep.First != 1 || rep.Last != 3 ||
		rep.Findings != 1 || rep.Changes != 1 || rep.Commit != want.Commit || rep.Calls != 3 {
		t.Errorf("report = %+v, want like %+v", rep, want)
	}
	if len(rep.Files) != 1 || rep.Files[0] != (FileChange{Path: "USER.md", Added: 1, Changes: 1}) {
		t.Errorf("report files = %+v", rep.Files)
	}
	if rep.Usage.Calls != 3 || rep.Usage.PromptTokens == 0 || rep.Phase1.PromptTokens == 0 || rep.Phase2.PromptTokens == 0 {
		t.Errorf("usage = %+v (phase 1 %+v, phase 2 %+v)", rep.Usage, rep.Phase1, rep.Phase2)
	}
	if len(progress) != 2 || !strings.Contains(progress[0], "reading 3 history entries") || !strings.Contains(progress[1], "editing") {
		t.Errorf("progress = %q", progress)
	}
}

// checkHappyRequests checks what TestRunHappyPath's Dream asked the
// model: phase 1 without tools, with the entries and the files; phase 2
// with its two tools and the finding.
func checkHappyRequests(t *testing.T, e *env) {
	t.Helper()
	reqs := e.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
	}
	p1 := reqs[0]
	if len(p1.Tools) != 0 {
		t.Errorf("phase 1 offered tools %v", p1.Tools)
	}
	user := p1.Messages[1].Content
	for _, want := range []string{"[2026-04-03 00:02] - User prefers tea over coffee", "## Today\n", "## Current memory/MEMORY.md", "- Project: dreamgate.", "## Current SOUL.md", "## Current USER.md"} {
		if !strings.Contains(user, want) {
			t.Errorf("phase 1 input lacks %q:\n%s", want, user)
		}
	}
	if got := strings.Join(reqs[1].Tools, ","); got != "read_file,edit_file" {
		t.Errorf("phase 2 tools = %s", got)
	}
	if !strings.Contains(reqs[1].Messages[1].Content, "[USER] prefers tea over coffee") {
		t.Errorf("phase 2 input lacks the finding:\n%s", reqs[1].Messages[1].Content)
	}
	e.checkWire()
}

func TestNothingNewMakesNoModelCall(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 5, func(int) string { return "- old" })
	if err := e.hist.SetDreamCursor(5); err != nil {
		t.Fatal(err)
	}
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != OutcomeNothingNew || rep.Calls != 0 {
		t.Errorf("report = %+v", rep)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("model requests = %d, want 0", n)
	}
	if n := len(e.log(10)); n != 1 {
		t.Errorf("commits = %d, want only the initial one", n)
	}
}

// TestCursorRules: the cursor advances only when phase 2 completes (or phase
// 1 found nothing); failures leave it and are counted, except those that
// are not the batch's fault.
func TestCursorRules(t *testing.T) {
	edit := calls(editCall("memory/MEMORY.md", "- Project: dreamgate.\n", "- Project: dreamgate, a chat gateway in Go.\n"))
	readMemory := func(i int) llmtest.Reply {
		return calls(llm.ToolCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"memory/MEMORY.md","x":%d}`, i)})
	}
	tests := []struct {
		name          string
		replies       []llmtest.Reply
		maxIterations int
		wantOutcome   Outcome
		wantCursor    int
		wantCommits   int // besides init
		wantFailures  int
		wantRequests  int
		wantReason    string
	}{
		{"completed with changes", []llmtest.Reply{llmtest.Text("[MEMORY] dreamgate is a chat gateway in Go"), edit, llmtest.Text("done")},
			0, OutcomeCompleted, 4, 1, 0, 3, ""},
		{"completed without changes", []llmtest.Reply{llmtest.Text("[MEMORY] the project is dreamgate"), llmtest.Text("Already there.")},
			0, OutcomeCompleted, 4, 0, 0, 2, ""},
		{"phase 1 found nothing", []llmtest.Reply{llmtest.Text("[SKIP]")},
			0, OutcomeCompleted, 4, 0, 0, 1, ""},
		{"phase 1 rejected", []llmtest.Reply{llmtest.Status(400, "")},
			0, OutcomeFailed, 0, 0, 1, 1, "the model rejected the request (HTTP 400)"},
		{"phase 1 model unavailable is not counted", []llmtest.Reply{llmtest.Status(503, "")},
			0, OutcomeFailed, 0, 0, 0, 1, "the model is unavailable"},
		{"phase 1 empty", []llmtest.Reply{llmtest.Text("")},
			0, OutcomeFailed, 0, 0, 1, 1, "the model's analysis was empty"},
		{"phase 1 cut off", []llmtest.Reply{{Text: "[USER] likes", FinishReason: "length"}},
			0, OutcomeFailed, 0, 0, 1, 1, "the analysis was cut off"},
		{"phase 1 prose", []llmtest.Reply{llmtest.Text("Sorry, I cannot help with that.")},
			0, OutcomeFailed, 0, 0, 1, 1, "did not use the expected format"},
		{"phase 2 error", []llmtest.Reply{llmtest.Text("[MEMORY] dreamgate is a chat gateway in Go"), edit, llmtest.Status(400, "")},
			0, OutcomeFailed, 0, 0, 1, 3, "the model rejected the request"},
		// The budget of one finding is the floor (maxIterations, 3 here)
		// or the finding plus the margin for reads and retries (6).
		{"phase 2 iteration cap", []llmtest.Reply{llmtest.Text("[MEMORY] dreamgate is a chat gateway in Go"), edit,
			readMemory(1), readMemory(2), readMemory(3), readMemory(4), readMemory(5)},
			3, OutcomeFailed, 0, 0, 1, 7, "used its 6 model calls without finishing"},
		{"phase 2 final answer cut off", []llmtest.Reply{llmtest.Text("[MEMORY] dreamgate is a chat gateway in Go"), edit,
			{Text: "I updated MEMORY.md and", FinishReason: "length"}},
			0, OutcomeFailed, 0, 0, 1, 3, "answer was cut off at the model's output limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- fact %d", i) })
			e.srv.Push(tc.replies...)
			rep, err := e.dreamer(Config{MaxIterations: tc.maxIterations}).Run(t.Context(), TriggerCron, AllScopes(), nil)
			if rep.Outcome != tc.wantOutcome {
				t.Fatalf("outcome = %s (reason %q, err %v), want %s", rep.Outcome, rep.Reason, err, tc.wantOutcome)
			}
			checkCursorCase(t, e, rep, err, tc.wantOutcome, tc.wantCursor, tc.wantCommits, tc.wantFailures, tc.wantRequests, tc.wantReason)
			e.checkWire()
		})
	}
}

// checkCursorCase asserts what a TestCursorRules case's run left.
func checkCursorCase(t *testing.T, e *env, rep Report, err error, wantOutcome Outcome, wantCursor, wantCommits, wantFailures, wantRequests int, wantReason string) {
	t.Helper()
	if (err != nil) != (wantOutcome == OutcomeFailed) {
		t.Errorf("err = %v for outcome %s", err, rep.Outcome)
	}
	if err != nil && !errors.Is(err, ErrRunFailed) {
		t.Errorf("err = %v, want ErrRunFailed", err)
	}
	if c := e.hist.cursor(t); c != wantCursor {
		t.Errorf("cursor = %d, want %d", c, wantCursor)
	}
	if n := len(e.log(10)) - 1; n != wantCommits {
		t.Errorf("commits = %d, want %d", n, wantCommits)
	}
	if rep.Failures != wantFailures {
		t.Errorf("failures = %d, want %d", rep.Failures, wantFailures)
	}
	if n := len(e.srv.Requests()); n != wantRequests {
		t.Errorf("requests = %d, want %d", n, wantRequests)
	}
	if !strings.Contains(rep.Reason, wantReason) {
		t.Errorf("reason = %q, want %q", rep.Reason, wantReason)
	}
	if strings.Contains(rep.Reason, llmtest.BodyMarker) {
		t.Errorf("reason carries the provider body: %q", rep.Reason)
	}
	if wantOutcome == OutcomeFailed {
		// A failed run leaves no half-edit behind.
		if got := e.read("memory/MEMORY.md"); got != initMemory {
			t.Errorf("MEMORY.md after a failed run = %q", got)
		}
		undone := e.logs.Find(slog.LevelInfo, "undid the edits of a stopped chunk")
		if editedFirst := wantRequests >= 3; editedFirst != (len(undone) == 1) {
			t.Errorf("edited before failing: %v, undo log lines: %+v", editedFirst, undone)
		}
		if rep.Reason == "" || rep.Entries == 0 {
			t.Errorf("a failed run's report lacks its reason or its entries: %+v", rep)
		}
	}
}

// TestThirdFailureSkipsBatch: three counted failures on the same batch skip
// it, with a history record and a warning.
func TestThirdFailureSkipsBatch(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 4, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	d := e.dreamer(Config{})
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("no idea what you mean") })

	for run := 1; run <= 2; run++ {
		rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
		if rep.Outcome != OutcomeFailed || rep.Failures != run || errors.Is(err, ErrBatchSkipped) {
			t.Fatalf("run %d: outcome %s, failures %d, err %v", run, rep.Outcome, rep.Failures, err)
		}
		if c := e.hist.cursor(t); c != 0 {
			t.Fatalf("run %d: cursor moved to %d", run, c)
		}
		if rep.MaxFailures != 3 {
			t.Errorf("run %d: MaxFailures = %d", run, rep.MaxFailures)
		}
	}
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomeSkipped || !errors.Is(err, ErrBatchSkipped) || !errors.Is(err, ErrRunFailed) {
		t.Fatalf("third run: outcome %s, err %v", rep.Outcome, err)
	}
	all := e.hist.all(t)
	if len(all) != 5 {
		t.Fatalf("history has %d entries, want the 4 plus the skip record", len(all))
	}
	rec := all[4]
	if !strings.HasPrefix(rec.Content, "[DREAM-SKIPPED] history entries 1-4") || !strings.Contains(rec.Content, "after 3 failed Dream runs") {
		t.Errorf("skip record = %q", rec.Content)
	}
	// The record is the next entry, so the cursor steps over it too.
	if c := e.hist.cursor(t); c != rec.Cursor {
		t.Errorf("cursor = %d, want %d (past the batch and its record)", c, rec.Cursor)
	}
	if w := e.logs.Find(slog.LevelWarn, "skipped a history batch"); len(w) != 1 || w[0].Attrs["first"] != "1" || w[0].Attrs["last"] != "4" {
		t.Errorf("warning = %+v", w)
	}
	if rep.Failures != 3 || rep.BatchFirst != 1 || rep.BatchLast != 4 {
		t.Errorf("skip report: failures %d, batch %d-%d", rep.Failures, rep.BatchFirst, rep.BatchLast)
	}
	// Fresh start: the next batch's failures count from one.
	e.hist.seed(t, rec.Cursor, 1, func(int) string { return "- new" })
	rep, _ = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomeFailed || rep.Failures != 1 || rep.First != rec.Cursor+1 {
		t.Errorf("next batch: %+v", rep)
	}
}

// TestSkipOnlyWhatEveryFailureRead: entries that joined a failing batch
// after its first failure were not read three times, so the skip leaves
// them for the next run.
func TestSkipOnlyWhatEveryFailureRead(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(i int) string { return fmt.Sprintf("- old fact %d", i) })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("no idea what you mean") })
	d := e.dreamer(Config{})
	if rep, _ := d.Run(t.Context(), TriggerCron, AllScopes(), nil); rep.Outcome != OutcomeFailed || rep.Last != 2 {
		t.Fatalf("first run: %+v", rep)
	}
	e.hist.seed(t, 2, 2, func(i int) string { return fmt.Sprintf("- new fact %d", i) })
	for range 2 {
		_, _ = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	}
	all := e.hist.all(t)
	if len(all) != 5 || !strings.HasPrefix(all[4].Content, "[DREAM-SKIPPED] history entries 1-2 ") {
		t.Fatalf("history = %+v, want the skip of entries 1-2 recorded", all)
	}
	if c := e.hist.cursor(t); c != 2 {
		t.Errorf("cursor = %d, want 2: entries 3 and 4 were read only twice", c)
	}
}

// TestSkipRecordNotSteppedOverWhenOthersFollow: entries beyond the batch
// stay unread; only a record that is the very next entry is stepped over.
func TestSkipRecordNotSteppedOverWhenOthersFollow(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 5, func(i int) string { return fmt.Sprintf("- fact %d", i) })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(400, "") })
	d := e.dreamer(Config{MaxBatchSize: 3, MaxFailures: 2})
	for range 2 {
		_, _ = d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	}
	if c := e.hist.cursor(t); c != 3 {
		t.Errorf("cursor = %d, want 3 (entries 4 and 5 and the record stay unread)", c)
	}
	if all := e.hist.all(t); len(all) != 6 || !strings.HasPrefix(all[5].Content, "[DREAM-SKIPPED] history entries 1-3") {
		t.Errorf("history = %+v", all)
	}
}

func TestCancelledRunIsNotCounted(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	ctx, cancel := context.WithCancel(t.Context())
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply {
		cancel()
		return llmtest.Slow(time.Minute, llmtest.Text("[SKIP]"))
	})
	rep, err := e.dreamer(Config{}).Run(ctx, TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomeFailed || rep.Failures != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if p := e.progress(); p.Failures != nil {
		t.Errorf("failures recorded for a cancelled run: %+v", p.Failures)
	}
}

func TestDeadlineIsAFailure(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	e.srv.Push(llmtest.Slow(time.Minute, llmtest.Text("[SKIP]")))
	rep, err := e.dreamer(Config{Timeout: 100 * time.Millisecond}).Run(t.Context(), TriggerCron, AllScopes(), nil)
	if rep.Outcome != OutcomeFailed || rep.Failures != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if !strings.Contains(rep.Reason, "longer than its limit of 100ms") {
		t.Errorf("reason = %q", rep.Reason)
	}
}

// TestHandEditsCommittedFirst: a hand edit of MEMORY.md becomes a manual:
// commit, and the Dream commit shows Dream's edit alone.
func TestHandEditsCommittedFirst(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- User likes tea" })
	testkit.WriteFile(t, e.ws, "memory/MEMORY.md", initMemory+"- Deploys on Fridays are banned.\n")
	e.srv.Push(
		llmtest.Text("[USER] likes tea"),
		calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")),
		llmtest.Text("done"),
	)
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := e.log(10)
	if len(cs) != 3 || cs[1].Subject != gitstore.ManualSubject || !strings.HasPrefix(cs[0].Subject, "dream:") {
		t.Fatalf("commits = %+v", cs)
	}
	if rep.ManualCommit != cs[1].Short {
		t.Errorf("report manual commit = %q, want %q", rep.ManualCommit, cs[1].Short)
	}
	_, manual, err := e.repo.Show(cs[1].SHA, nil)
	if err != nil || len(manual.Files) != 1 || manual.Files[0].Path != "memory/MEMORY.md" {
		t.Errorf("manual commit diff = %+v, %v", manual.Files, err)
	}
	_, dreamDiff, err := e.repo.Show(cs[0].SHA, nil)
	if err != nil || len(dreamDiff.Files) != 1 || dreamDiff.Files[0].Path != "USER.md" {
		t.Errorf("dream commit diff = %+v, %v", dreamDiff.Files, err)
	}
	if strings.Contains(cs[0].Body, "Fridays") {
		t.Errorf("dream commit carries the hand edit:\n%s", cs[0].Body)
	}
	if rep.ManualCommit != cs[1].Short {
		t.Errorf("report's manual commit = %q, want %q", rep.ManualCommit, cs[1].Short)
	}
}

// TestCompactionKeepsUnread: compaction after every attempt never drops an
// entry Dream has not read.
func TestCompactionKeepsUnread(t *testing.T) {
	tests := []struct {
		name        string
		cursor      int
		reply       llmtest.Reply
		wantCursor  int
		wantDropped int
	}{
		{"half unread, completed run", 600, llmtest.Text("[SKIP]"), 620, 200},
		{"most unread, failed run", 100, llmtest.Status(400, ""), 100, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.hist.seed(t, 0, 1200, func(i int) string { return fmt.Sprintf("- fact %d", i) })
			if err := e.hist.SetDreamCursor(tc.cursor); err != nil {
				t.Fatal(err)
			}
			e.srv.Push(tc.reply)
			rep, _ := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
			if c := e.hist.cursor(t); c != tc.wantCursor {
				t.Fatalf("cursor = %d, want %d", c, tc.wantCursor)
			}
			if rep.Dropped != tc.wantDropped {
				t.Errorf("dropped = %d, want %d", rep.Dropped, tc.wantDropped)
			}
			all := e.hist.all(t)
			seen := map[int]bool{}
			for _, en := range all {
				seen[en.Cursor] = true
			}
			for c := tc.wantCursor + 1; c <= 1200; c++ {
				if !seen[c] {
					t.Fatalf("unread entry %d was dropped", c)
				}
			}
			if len(all) != 1200-tc.wantDropped {
				t.Errorf("history has %d entries, want %d", len(all), 1200-tc.wantDropped)
			}
		})
	}
}

func TestPromptOverride(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 1, func(int) string { return "- x" })
	testkit.WriteFile(t, e.ws, "prompts/dream.md", "Only remember things about cats.\n")
	e.srv.Push(llmtest.Text("[MEMORY] cats"), llmtest.Text("nothing to do"))
	if _, err := e.dreamer(Config{}).Run(t.Context(), TriggerManual, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	for i, r := range reqs {
		sys := r.Messages[0].Content
		if !strings.HasPrefix(sys, "Only remember things about cats.") {
			t.Errorf("phase %d system prompt does not start with the override:\n%s", i+1, sys)
		}
		if strings.Contains(sys, "You look after the long-term memory") || strings.Contains(sys, "You edit the memory files") {
			t.Errorf("phase %d keeps the built-in guidance", i+1)
		}
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "[FILE-REMOVE]") || !strings.Contains(reqs[1].Messages[0].Content, "edit_file(path, old_text, new_text)") {
		t.Error("the fixed format and tool rules are missing under an override")
	}

	// Blank override: the built-in guidance.
	testkit.WriteFile(t, e.ws, "prompts/dream.md", " \n\n")
	e.hist.seed(t, 1, 1, func(int) string { return "- y" })
	e.srv.Push(llmtest.Text("[SKIP]"))
	if _, err := e.dreamer(Config{}).Run(t.Context(), TriggerManual, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	if sys := e.srv.Requests()[2].Messages[0].Content; !strings.HasPrefix(sys, "You look after the long-term memory") {
		t.Errorf("blank override not ignored:\n%s", sys)
	}
}

func TestModelOverrideIsSent(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 1, func(int) string { return "- x" })
	e.srv.Push(llmtest.Text("[USER] x"), llmtest.Text("ok"))
	if _, err := e.dreamer(Config{Model: "cheap-model"}).Run(t.Context(), TriggerManual, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	for i, r := range e.srv.Requests() {
		if r.Model != "cheap-model" {
			t.Errorf("request %d model = %q", i, r.Model)
		}
	}
}

// keyRecorder records the purpose and cache key of every call.
type keyRecorder struct {
	Model
	mu   sync.Mutex
	keys []string
}

func (k *keyRecorder) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	k.mu.Lock()
	k.keys = append(k.keys, req.Purpose+"="+req.CacheKey)
	k.mu.Unlock()
	return k.Model.Chat(ctx, req)
}

// Every call of a phase carries that phase's one cache key, run after run:
// the calls repeat the phase's instructions (and tools), which a provider's
// prompt cache can then serve.
func TestPhasesShareACacheKey(t *testing.T) {
	e := newEnv(t)
	rec := &keyRecorder{Model: e.llm}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: rec, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	for run, fact := range []string{"- Ana likes tea", "- Bob likes coffee"} {
		e.hist.seed(t, run, 1, func(int) string { return fact })
		e.srv.Push(llmtest.Text("[USER] "+fact[2:]), calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n"+fact+"\n")), llmtest.Text("Done."))
		if rep, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil); err != nil || rep.Outcome != OutcomeCompleted {
			t.Fatalf("run %d: %+v, %v", run, rep, err)
		}
		testkit.WriteFile(t, e.ws, "USER.md", initUser)
	}
	want := []string{
		llm.PurposeDreamAnalysis + "=" + cacheKeyAnalysis, llm.PurposeDreamEdit + "=" + cacheKeyEdit, llm.PurposeDreamEdit + "=" + cacheKeyEdit,
	}
	want = append(want, want...)
	if !slices.Equal(rec.keys, want) {
		t.Errorf("calls %q, want %q", rec.keys, want)
	}
}
