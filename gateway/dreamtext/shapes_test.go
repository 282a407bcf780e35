package dreamtext

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
)

// The reports dream's own tests get from real runs (a partial batch, a
// skip, a drained backlog, a failure after a completed batch, a recovered
// run), as the person reads them.
func TestReportsOfRuns(t *testing.T) {
	user := []dream.FileChange{{Path: "USER.md", Added: 1, Changes: 1}}
	tests := []struct {
		name string
		r    dream.Report
		want string
	}{
		{"partial", dream.Report{Outcome: dream.OutcomePartial, Entries: 4, First: 1, Last: 4, BatchFirst: 1, BatchLast: 4,
			Commit: "c0ffee00", Left: 15, Reason: "the editing step used its 15 model calls without finishing"},
			"Dream applied part of the findings from history entries 1-4 (commit c0ffee00), then stopped: the editing step used its 15 model calls without finishing. The other 15 findings will be applied next time."},
		{"skipped", dream.Report{Outcome: dream.OutcomeSkipped, Entries: 4, First: 1, Last: 4, BatchFirst: 1, BatchLast: 4, Failures: 3, MaxFailures: 3,
			Reason: "the model's analysis did not use the expected format"},
			"Dream failed: the model's analysis did not use the expected format. After 3 failed runs, history entries 1-4 were skipped; the skip is recorded in the history."},
		{"backlog left", dream.Report{Outcome: dream.OutcomeCompleted, Batches: 2, Entries: 40, EntriesDone: 40, First: 1, Last: 40, Findings: 2, Backlog: 10},
			"Dream: read 40 entries in 2 batches; 2 findings, but no memory file changed. 10 unread history entries are still waiting for the next Dream."},
		{"backlog drained", dream.Report{Outcome: dream.OutcomeCompleted, Batches: 1, Entries: 10, EntriesDone: 10, Findings: 1},
			"Dream: read 10 entries; 1 finding, but no memory file changed."},
		{"later batch failed", dream.Report{Outcome: dream.OutcomeFailed, Batches: 1, Entries: 6, EntriesDone: 3, First: 1, Last: 6,
			Changes: 1, Files: user, Commit: "abcd1234", Commits: []string{"abcd1234"}, Failures: 1, MaxFailures: 3,
			Reason: "the model rejected the request"},
			"Dream: 1 change to USER.md (commit abcd1234), 3 history entries read. Then the next batch failed: Dream failed: the model rejected the request. The entries will be read again next time (failed 1 of 3 times)."},
		{"recovered first", dream.Report{Outcome: dream.OutcomeCompleted, Recovered: "5eed5eed", Entries: 4, Batches: 1, Changes: 1, Files: user, Commit: "abcd1234", Commits: []string{"abcd1234"}},
			"Dream first finished what an interrupted Dream had begun (commit 5eed5eed). Dream: 1 change to USER.md (commit abcd1234), 4 history entries read."},
		{"two commits", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 6, Batches: 2, Changes: 2, Files: []dream.FileChange{{Path: "USER.md", Changes: 2}},
			Commit: "bbbb2222", Commits: []string{"aaaa1111", "bbbb2222"}},
			"Dream: 2 changes to USER.md (commits aaaa1111, bbbb2222), 6 history entries in 2 batches read."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Report(tc.r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A person who is not the operator reads the public reason.
func TestPublicReport(t *testing.T) {
	r := dream.Report{Outcome: dream.OutcomeFailed, Entries: 2,
		Reason:       "the model refused the API key (401): check llm.apiKey",
		PublicReason: "the model is not available right now; the operator has been told"}
	if got := Report(r); !strings.Contains(got, "llm.apiKey") {
		t.Errorf("Report = %q, want the operator's hint", got)
	}
	if got := PublicReport(r); strings.Contains(got, "llm.apiKey") || !strings.Contains(got, "the operator has been told") {
		t.Errorf("PublicReport = %q", got)
	}
}

// The reply to a restore names every file and line it changed, what it
// made of the places later changes touched, and how to undo it.
func TestRestored(t *testing.T) {
	target := gitstore.Commit{SHA: "t", Short: "1a2b3c4d", Subject: "dream: 1 change from history 1-1"}
	r := dream.RestoreResult{Target: target, Revert: gitstore.Commit{Short: "99990000"}, Files: []string{"scopes/x/USER.md"},
		Plan: plan(t, "USER.md", "- a\n- b\n", "- a\n- B\n- c\n", "- a2\n- B\n- c\n")}
	want := "Undid `1a2b3c4d` (dream: 1 change from history 1-1) line by line (new commit `99990000`).\n" +
		"- USER.md: 2 lines taken out, 1 line put back\n" +
		"```diff\nUSER.md\n-- B\n-- c\n+- b\n```\n" +
		"Every other line and file stays as it was. The history behind the undone change will not be dreamed again.\n" +
		"Undo this restore with /dream-restore 99990000"
	if got := Chat().Restored(r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	r.Plan = plan(t, "USER.md", "- office Harbour\n- tea\n", "- office Canal Road\n- tea\n- cats\n", "- office Dock\n- tea\n- cats\n")
	r.Held = []dream.Hold{{Tokens: 3012, Until: 4524}}
	got := Chat().Restored(r)
	for _, want := range []string{
		"- USER.md: 1 line taken out, 0 lines put back\n```diff\nUSER.md\n-- cats\n```\n",
		"Where later changes had touched the same lines (1 place), the later lines were kept.\n",
		"back in hot memory (3012 tokens now): it will not be compacted again until it grows past 4524 tokens",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reply lacks %q:\n%s", want, got)
		}
	}
	r.Plan.Resolution = gitstore.UndoAll
	got = Chat().Restored(r)
	if !strings.Contains(got, "- USER.md: 2 lines taken out, 1 line put back\n```diff\nUSER.md\n-- cats\n-- office Dock\n+- office Harbour\n```") ||
		!strings.Contains(got, "(1 place), those were undone too.") {
		t.Errorf("undone whole:\n%s", got)
	}
	if strings.Contains(got, "scopes/") || strings.Contains(got, "by hand") {
		t.Errorf("the reply names the scope's folder, or hand edits nobody made:\n%s", got)
	}
	r.Saved = []string{"5a5a5a5a"}
	if got := Chat().Restored(r); !strings.Contains(got, "Edits made by hand since the last commit were saved first (`5a5a5a5a`); they stay.") {
		t.Errorf("hand edits saved first:\n%s", got)
	}
	r.Plan.Links = []string{"scopes/x/memory/MEMORY.md"}
	if got := Chat().Restored(r); !strings.Contains(got, "those were undone too.\nMEMORY.md stays as it is: before `1a2b3c4d` it was a symbolic link, and a restore never brings a link back.\nEvery other line") {
		t.Errorf("a file that was a link before:\n%s", got)
	}
}

// Where later changes touched the commit's lines, nothing is changed yet:
// the reply shows both sides and the two commands.
func TestChoose(t *testing.T) {
	p := dream.RestorePlan{RestorePlan: plan(t, "USER.md", "- office Harbour\n- tea\n", "- office Canal Road\n- tea\n- cats\n", "- office Dock\n- tea\n- cats\n")}
	p.Target = gitstore.Commit{Short: "1a2b3c4d", Subject: "dream: A"}
	p.Later = []gitstore.Commit{{Short: "5e6f7a8b", Subject: "dream: B"}}
	want := "Undoing `1a2b3c4d` (dream: A) needs your choice: later changes touched 1 place of the lines it changed. Nothing has been changed yet.\n\n" +
		"Either way:\n- USER.md: 1 line taken out, 0 lines put back\n```diff\nUSER.md\n-- cats\n```\n\n" +
		"Where later changes touched the same lines:\n```text\nUSER.md\n  now:    - office Dock\n  before: - office Harbour\n```\n" +
		"Changed since by: `5e6f7a8b` dream: B.\n\n" +
		"Choose:\n- `dreamgate dream restore 1a2b3c4d keep` — undo the rest and keep the later lines\n" +
		"- `dreamgate dream restore 1a2b3c4d all` — undo it whole: the lines come back as they were before it, replacing the later ones"
	if got := CLI().Choose(p); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	p.Links = []string{"scopes/x/SOUL.md"}
	if got := CLI().Choose(p); !strings.Contains(got, "Either way:\n- USER.md: 1 line taken out, 0 lines put back\n```diff\nUSER.md\n-- cats\n```\nSOUL.md stays as it is: before `1a2b3c4d` it was a symbolic link, and a restore never brings a link back.\n\nWhere") {
		t.Errorf("a file that was a link before:\n%s", got)
	}
}

// plan is the restore plan of one file's change base→target, standing now
// as current.
func plan(t *testing.T, path, base, target, current string) gitstore.RestorePlan {
	t.Helper()
	text := func(s string) gitstore.FileText { return gitstore.FileText{Data: []byte(s), Exists: true} }
	_, f := gitstore.UndoLines(text(base), text(target), text(current), gitstore.KeepLater)
	f.Path = path
	return gitstore.RestorePlan{Files: []gitstore.FileUndo{f}}
}

// What is left for later shows in the status line and in /dream-log.
func TestStatusOfWhatIsLeft(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	s := dream.Status{
		Last:    &dream.LastRun{When: now.Add(-time.Minute), Outcome: dream.OutcomePartial, First: 1, Last: 4, Left: 15, Commit: "c0ffee00", Changes: 10},
		Backlog: 10,
		Skips: []dream.Skip{{When: now.Add(-3 * time.Hour), First: 1, Last: 4}, {When: now.Add(-2 * time.Hour), First: 5, Last: 9, Findings: 2,
			Reason: "the editing step kept repeating the same tool call"}},
	}
	want := "Dream: last: 1m ago, partial (10 changes, commit c0ffee00); 15 findings of history 1-4 left for the next run; " +
		"10 unread history entries waiting; skipped history 5-9 2h ago after repeated failures; next: not scheduled"
	if got := Status(s, now); got != want {
		t.Errorf("Status:\n got %q\nwant %q", got, want)
	}
	wantSkips := "Skipped after repeated failures (not read into memory; recorded in the history):\n" +
		"- history entries 5-9, 2h ago, 2 findings not applied: the editing step kept repeating the same tool call\n" +
		"- history entries 1-4, 3h ago"
	if got := Skips(s, now); got != wantSkips {
		t.Errorf("Skips:\n got %q\nwant %q", got, wantSkips)
	}
	if got := Skips(dream.Status{}, now); got != "" {
		t.Errorf("Skips without any = %q", got)
	}
}

// In a shell the texts name the shell's commands, never the chat's.
func TestCLIWordsNameTheCLI(t *testing.T) {
	c := gitstore.Commit{SHA: "1a2b3c4d5e6f", Short: "1a2b3c4d", Subject: "dream: 1 change from history 1-1", When: time.Date(2026, 4, 3, 0, 2, 0, 0, time.UTC)}
	now := time.Now()
	texts := map[string]string{
		"commit":     CLI().Commit(c, gitstore.Diff{Files: []gitstore.FileChange{{Path: "USER.md", Added: 1}}}),
		"list":       CLI().List([]gitstore.Commit{c}),
		"unknown":    CLI().Error(gitstore.ErrUnknownRevision, "dead", now),
		"invalid":    CLI().Error(gitstore.ErrInvalidRevision, "xyz!", now),
		"not dream":  CLI().Error(dream.ErrNotDreamCommit, "dead", now),
		"no commits": CLI().NoDreamCommits(dream.Status{}, now),
	}
	wants := map[string]string{
		"commit":     "Undo it with `dreamgate dream restore 1a2b3c4d`",
		"list":       "See one with `dreamgate dream log <sha>`; undo one with `dreamgate dream restore <sha>`: only its own lines change back",
		"unknown":    "Try `dreamgate dream restore` to list them.",
		"invalid":    "e.g. `dreamgate dream log 1a2b3c4d`.",
		"not dream":  "Try `dreamgate dream restore` to list them.",
		"no commits": "Start one with `dreamgate dream run`.",
	}
	for name, got := range texts {
		if !strings.Contains(got, wants[name]) || strings.Contains(got, "/dream") {
			t.Errorf("%s: %q, want %q and no chat command", name, got, wants[name])
		}
	}
}
