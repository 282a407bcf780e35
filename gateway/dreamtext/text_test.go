package dreamtext

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
)

func TestReport(t *testing.T) {
	tests := []struct {
		name string
		r    dream.Report
		want string
	}{
		{"nothing new", dream.Report{Outcome: dream.OutcomeNothingNew}, "Dream: nothing new to read."},
		{"changes in two files", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 14, Commit: "1a2b3c4d", Changes: 4,
			Files: []dream.FileChange{{Path: "memory/MEMORY.md", Changes: 3}, {Path: "USER.md", Changes: 1}}},
			"Dream: 3 changes to MEMORY.md, 1 to USER.md (commit 1a2b3c4d), 14 history entries read."},
		// Each scope's USER.md: told as one file, no scope named.
		{"changes in two scopes", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 5, Commit: "2b3c4d5e", Commits: []string{"1a2b3c4d", "2b3c4d5e"}, Changes: 3,
			Files: []dream.FileChange{{Path: "USER.md", Changes: 2}, {Path: "scopes/team-slack-t1/USER.md", Changes: 1}}},
			"Dream: 3 changes to USER.md (commits 1a2b3c4d, 2b3c4d5e), 5 history entries read."},
		{"one change one entry", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 1, Commit: "1a2b3c4d", Changes: 1,
			Files: []dream.FileChange{{Path: "SOUL.md", Changes: 1}}},
			"Dream: 1 change to SOUL.md (commit 1a2b3c4d), 1 history entry read."},
		{"nothing worth changing", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 14}, "Dream: read 14 entries, nothing worth changing."},
		{"a deep Dream alone", dream.Report{Outcome: dream.OutcomeCompleted, Deep: []dream.DeepReport{{Merged: 2, ColdLines: 40, Commit: "dee9dee9"}}},
			"Dream: nothing new to read. Deep Dream: 2 lines merged away, 40 lines moved to cold memory (commit dee9dee9); nothing is deleted, and a restore of the commit puts the lines back."},
		{"a batch and two deep Dreams", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 1, Commit: "1a2b3c4d", Changes: 1,
			Files: []dream.FileChange{{Path: "USER.md", Changes: 1}}, Deep: []dream.DeepReport{{ColdLines: 1, Commit: "dee9dee9"}, {Merged: 1, Commit: "dee8dee8"}, {Why: "failed"}}},
			"Dream: 1 change to USER.md (commit 1a2b3c4d), 1 history entry read. Deep Dream: 1 line merged away, 1 line moved to cold memory (commits dee9dee9, dee8dee8); nothing is deleted, and a restore of the commits puts the lines back."},
		// Phase 1 found something but the files did not change (already
		// there, or every edit failed): the reply must not say there was
		// nothing worth changing.
		{"findings but no change", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 14, Findings: 2},
			"Dream: read 14 entries; 2 findings, but no memory file changed."},
		{"one finding no change", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 1, Findings: 1},
			"Dream: read 1 entry; 1 finding, but no memory file changed."},
		{"hand edits saved", dream.Report{Outcome: dream.OutcomeCompleted, Entries: 2, ManualCommit: "99aa88bb"},
			"Dream: read 2 entries, nothing worth changing. Hand edits made since the last Dream were saved first (commit 99aa88bb)."},
		{"failed, counted", dream.Report{Outcome: dream.OutcomeFailed, Entries: 3, Reason: "the model's analysis was empty", Failures: 1, MaxFailures: 3},
			"Dream failed: the model's analysis was empty. The entries will be read again next time (failed 1 of 3 times)."},
		{"failed, not counted", dream.Report{Outcome: dream.OutcomeFailed, Entries: 3, Reason: "the model is unavailable: connection refused", MaxFailures: 3},
			"Dream failed: the model is unavailable: connection refused. The entries will be read again next time."},
		{"failed before reading", dream.Report{Outcome: dream.OutcomeFailed, Reason: "the history could not be read"},
			"Dream failed: the history could not be read."},
		{"skipped", dream.Report{Outcome: dream.OutcomeSkipped, First: 41, Last: 60, Entries: 20, Failures: 3, Reason: "the editing step kept repeating the same tool call"},
			"Dream failed: the editing step kept repeating the same tool call. After 3 failed runs, history entries 41-60 were skipped; the skip is recorded in the history."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Report(tc.r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		err  error
		want string
	}{
		{&dream.BusyError{Since: now.Add(-12 * time.Second)}, "Already dreaming (started 12s ago)."},
		{fmt.Errorf("wrapped: %w", &dream.BusyError{Since: now.Add(-3*time.Minute - 5*time.Second), Elsewhere: true}), "Already dreaming (started 3m ago)."},
		{&dream.BusyError{Since: now.Add(-65 * time.Minute)}, "Already dreaming (started 1h5m ago)."},
		{&dream.BusyError{}, "Already dreaming."},
		{dream.ErrAlreadyRunning, "Already dreaming."},
	}
	for _, tc := range tests {
		if got := Busy(tc.err, now); got != tc.want {
			t.Errorf("Busy(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestError(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"ambiguous", fmt.Errorf("show: %w", &gitstore.AmbiguousRevisionError{Prefix: "1a2b",
			Candidates: []string{"1a2b000000000000000000000000000000000000", "1a2bffff00000000000000000000000000000000"}}),
			"`1a2b` matches several commits (`1a2b0000`, `1a2bffff`); give more characters."},
		{"unknown", fmt.Errorf("x: %w", gitstore.ErrUnknownRevision), "No memory change `1a2b`. Try /dream-restore to list them."},
		{"no dream commits", gitstore.ErrNoMatchingCommit, "No Dream commits yet: Dream has not changed the memory files."},
		{"root", gitstore.ErrRootCommit, "`1a2b` is the first commit of the memory repository; there is no earlier state to restore."},
		{"only a link to bring back", fmt.Errorf("dream restore: %w", &gitstore.LinkNotRestoredError{Commit: "1a2b3c4d", Paths: []string{"scopes/team-slack-t1/USER.md"}}),
			"Undoing `1a2b` changes nothing: before it, USER.md was a symbolic link, and a restore never brings a link back (memory is never read through one)."},
		{"nothing to restore", gitstore.ErrNothingToCommit, "Undoing `1a2b` changes nothing now: its change is undone already, or every line of it was changed since and the later lines are kept."},
		{"locked", gitstore.ErrLocked, "The memory repository is busy (another git command is using it); try again in a moment."},
		{"damaged", fmt.Errorf("commit: %w", &gitstore.DamagedError{Ref: "refs/heads/main", Path: "/home/ana/.dreamgate/workspace/.git/refs/heads/main", Problem: "is empty", Reason: "secret"}),
			"Dream is stopped: the memory repository's history is damaged and could not be repaired automatically, so nothing was re-created; the gateway log says how to repair it."},
		{"busy", &dream.BusyError{Since: now.Add(-2 * time.Second)}, "Already dreaming (started 2s ago)."},
		{"run error", &dream.RunError{Reason: "the model's analysis was empty", Err: errors.New("secret provider body")}, "Dream failed: the model's analysis was empty."},
		{"anything else", errors.New("open /home/ana/.dreamgate/workspace/.git: token=abc"), "Something went wrong with the memory repository; see the log for details."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Chat().Error(tc.err, "1a2b", now)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if strings.Contains(got, "secret") || strings.Contains(got, "/home/") {
				t.Errorf("leaks the error text: %q", got)
			}
		})
	}
}

func TestCommitAndList(t *testing.T) {
	when := time.Date(2026, 4, 3, 0, 2, 0, 0, time.UTC)
	c := gitstore.Commit{SHA: "1a2b3c4d5e6f", Short: "1a2b3c4d", Subject: "dream: 2 changes from history 41-60", When: when}
	d := gitstore.Diff{
		Files:   []gitstore.FileChange{{Path: "memory/MEMORY.md", Added: 2, Deleted: 1}, {Path: "USER.md", Binary: true}},
		Unified: "diff --git a/memory/MEMORY.md b/memory/MEMORY.md\n--- a/memory/MEMORY.md\n+++ b/memory/MEMORY.md\n@@ -1 +1,2 @@\n-```go\n+````\n+x\n",
	}
	got := Chat().Commit(c, d)
	want := "dream: 2 changes from history 41-60\n`1a2b3c4d` 2026-04-03 00:02 UTC\nChanged: MEMORY.md (+2 -1), USER.md (binary)\n\n" +
		"`````diff\n" + strings.TrimRight(d.Unified, "\n") + "\n`````\n\nUndo it with /dream-restore 1a2b3c4d"
	if got != want {
		t.Errorf("FormatCommit:\n%s\nwant:\n%s", got, want)
	}
	manual := Chat().Commit(gitstore.Commit{Short: "99aa88bb", Subject: gitstore.ManualSubject, When: when}, gitstore.Diff{})
	if strings.Contains(manual, "/dream-restore") || !strings.Contains(manual, "No memory file changed") {
		t.Errorf("FormatCommit of a manual commit without diff:\n%s", manual)
	}
	long := gitstore.Diff{Files: []gitstore.FileChange{{Path: "USER.md", Added: 5000}}, Unified: strings.Repeat("+a line\n", 5000)}
	if got := Chat().Commit(c, long); !strings.Contains(got, "...[diff truncated]") || len(got) > logDiffCap+500 {
		t.Errorf("long diff not capped: %d chars", len(got))
	}

	if got := Chat().List(nil); got != "No Dream commits yet: Dream has not changed the memory files." {
		t.Errorf("Chat().List(nil) = %q", got)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	list := Chat().List([]gitstore.Commit{c, {Short: "0f0f0f0f", Subject: "dream: 1 change from history 1-40", When: when.In(berlin)}})
	wantList := "Changes you can undo, newest first:\n" +
		"- `1a2b3c4d` 2026-04-03 00:02 UTC dream: 2 changes from history 41-60\n" +
		"- `0f0f0f0f` 2026-04-03 02:02 CEST dream: 1 change from history 1-40\n" +
		"See one with /dream-log <sha>; undo one with /dream-restore <sha>: only its own lines change back, later changes and hand edits stay."
	if list != wantList {
		t.Errorf("FormatList:\n%s\nwant:\n%s", list, wantList)
	}
}

func TestStatus(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	deepAt := now.Add(-72 * time.Hour)
	tests := []struct {
		name string
		s    dream.Status
		want string
	}{
		{"never", dream.Status{}, "Dream: last: never; next: not scheduled"},
		{"completed and scheduled", dream.Status{
			Last: &dream.LastRun{When: now.Add(-2 * time.Hour), Outcome: dream.OutcomeCompleted, Changes: 3, Commit: "1a2b3c4d"},
			Next: now.Add(90 * time.Minute)},
			"Dream: last: 2h ago, completed (3 changes, commit 1a2b3c4d); next: 2026-04-03 13:30 UTC (in 1h30m)"},
		{"failed while another runs", dream.Status{Running: true, Since: now.Add(-5 * time.Second),
			Last: &dream.LastRun{When: now.Add(-time.Hour), Outcome: dream.OutcomeFailed, Reason: "the model's analysis was empty"}},
			"Dream: dreaming now (started 5s ago); last: 1h ago, failed: the model's analysis was empty; next: not scheduled"},
		{"deep Dreams", dream.Status{LastDeep: &deepAt, DeepAsked: []audience.Scope{"team-slack-t1"}},
			"Dream: last: never; last deep Dream 72h ago; a deep Dream is due for 1 scope over its memory budget; next: not scheduled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Status(tc.s, now); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestNothingNew(t *testing.T) {
	got := NothingNew("the archive of this conversation found nothing worth keeping", 15*time.Minute)
	want := "Dream: nothing new to read: the archive of this conversation found nothing worth keeping. " +
		"Conversations reach Dream once they are archived: when one grows past its share of the context window, on /new, or after 15 minutes without a message."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := NothingNew("", 0); !strings.HasPrefix(got, "Dream: nothing new to read. ") || !strings.Contains(got, "off") || strings.Contains(got, "0 minutes") {
		t.Errorf("idle archive off: %q", got)
	}
}

// Before the first Dream is different news from Dreams that changed nothing.
func TestNoDreamCommits(t *testing.T) {
	now := time.Date(2026, 4, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    dream.Status
		want string
	}{
		{"never ran, no schedule", dream.Status{}, "No Dream has run yet. Start one with /dream."},
		{"never ran, scheduled", dream.Status{Next: now.Add(90 * time.Minute)},
			"No Dream has run yet. Start one with /dream, or wait for the scheduled one at 2026-04-03 11:30 UTC (in 1h30m)."},
		{"first one running", dream.Status{Running: true, Since: now.Add(-12 * time.Second)},
			"The first Dream is running now (started 12s ago); it has not changed the memory files yet."},
		{"ran and changed nothing", dream.Status{Last: &dream.LastRun{When: now.Add(-3 * time.Minute), Outcome: dream.OutcomeNothingNew}},
			"No Dream commits yet: Dreams have run (the last 3m ago: nothing new to read) but none has changed the memory files."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Chat().NoDreamCommits(tt.s, now); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
