package dream

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// dreamEdit runs one Dream that replaces oldText with newText in rel.
func (e *env) dreamEdit(d *Dreamer, rel, oldText, newText string) Report {
	e.t.Helper()
	cur := e.hist.cursor(e.t)
	e.hist.seed(e.t, len(e.hist.all(e.t)), 1, func(int) string { return "- " + newText })
	e.srv.Push(llmtest.Text("[USER] "+newText), calls(editCall(rel, oldText, newText)), llmtest.Text("done"))
	rep, err := d.Run(e.t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Commit == "" {
		e.t.Fatalf("dream after cursor %d: %+v, %v", cur, rep, err)
	}
	return rep
}

func TestRestore(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	first := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")
	second := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Has a cat.\n")
	cursor := e.hist.cursor(t)

	// /dream-log of the latest Dream commit.
	c, diff, err := e.repo.Latest(SubjectPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Short != second.Commit || len(diff.Files) != 1 || diff.Files[0].Path != "USER.md" || !strings.Contains(diff.Unified, "+- Has a cat.") {
		t.Errorf("latest Dream commit %s, diff %+v; want %s adding the cat to USER.md", c.Short, diff, second.Commit)
	}

	// The list /dream-restore shows.
	cs, err := e.repo.Log(10, SubjectPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Short != second.Commit || cs[1].Short != first.Commit {
		t.Errorf("Dream commits = %+v, want %s then %s", cs, second.Commit, first.Commit)
	}

	res, err := d.Restore(first.Commit, AllScopes(), RestoreOptions{})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	// The first Dream's line goes; the second's stays.
	if got := e.read("USER.md"); strings.Contains(got, "Likes tea") || !strings.Contains(got, "- Name: Ana.\n- Has a cat.") {
		t.Errorf("USER.md after restore = %q, want the cat kept and the tea gone", got)
	}
	if res.Revert.Subject != gitstore.RevertPrefix+first.Commit || e.log(1)[0].SHA != res.Revert.SHA {
		t.Errorf("revert %q is not HEAD with its subject", res.Revert.Subject)
	}
	if len(res.Files) != 1 || res.Files[0] != "USER.md" || len(res.Plan.Files) != 1 || !strings.HasPrefix(res.Plan.Files[0].Removed[0], "- Likes tea.") {
		t.Errorf("restored files = %v, plan %+v", res.Files, res.Plan.Files)
	}
	if e.hist.cursor(t) != cursor {
		t.Errorf("cursor rolled back to %d, want %d", e.hist.cursor(t), cursor)
	}
	if res.Target.Short != first.Commit || res.Plan.Conflicts() != 0 || len(res.Held) != 0 {
		t.Errorf("restore result: target %s, plan %+v, held %+v; want %s without conflicts or hold", res.Target.Short, res.Plan, res.Held, first.Commit)
	}

	// A restore can be undone: the line comes back where it stood.
	back, err := d.Restore(res.Revert.Short, AllScopes(), RestoreOptions{})
	if err != nil {
		t.Fatalf("Restore of the restore: %v", err)
	}
	if got := e.read("USER.md"); back.Target.SHA != res.Revert.SHA || !strings.Contains(got, "- Has a cat.") || !strings.Contains(got, "- Likes tea.") {
		t.Errorf("USER.md after undoing the restore = %q", got)
	}

	errorCases := []struct {
		name, rev string
		want      error
	}{
		{"a restore whose change is undone already", res.Revert.Short, gitstore.ErrNothingToCommit},
		{"the initial commit", e.log(10)[len(e.log(10))-1].Short, ErrNotDreamCommit},
		{"unknown", "deadbeef", gitstore.ErrUnknownRevision},
		{"not hex", "xyz!", gitstore.ErrInvalidRevision},
	}
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			head := e.log(1)[0].SHA
			_, err := d.Restore(tc.rev, AllScopes(), RestoreOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Restore(%q) = %v, want %v", tc.rev, err, tc.want)
			}
			if e.log(1)[0].SHA != head {
				t.Error("a refused restore made a commit")
			}
		})
	}
}

// A restore waits for a write in progress through the shared workspace (a
// chat turn editing MEMORY.md): that write is then saved first, in the
// manual commit, instead of landing between the restore's save of hand
// edits and its rewrite of the files, where nothing would record it. (The
// restore then puts every memory file back to its state just before that
// commit, undoing the write too; the manual commit keeps it in history.)
func TestRestoreWaitsForWorkspaceWrites(t *testing.T) {
	e := newEnv(t)
	ws, err := workspace.Open(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Files: ws, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	first := e.dreamEdit(d, "USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Likes tea.\n")

	writing, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- ws.Exclusive(func() error {
			close(writing)
			<-release
			testkit.WriteFile(t, e.ws, "memory/MEMORY.md", initMemory+"- Said in chat: the demo is on Friday.\n")
			return nil
		})
	}()
	<-writing
	done := make(chan error, 1)
	go func() {
		_, err := d.Restore(first.Commit, AllScopes(), RestoreOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Restore ran while a workspace write was in progress (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Restore: %v", err)
	}
	commits := e.log(3)
	if !strings.HasPrefix(commits[0].Subject, gitstore.RevertPrefix) || commits[1].Subject != gitstore.ManualSubject {
		t.Fatalf("commits = %q, %q; want the revert on top of the manual commit of the chat's write", commits[0].Subject, commits[1].Subject)
	}
	if _, diff, err := e.repo.Show(commits[1].SHA, nil); err != nil || !strings.Contains(diff.Unified, "the demo is on Friday") {
		t.Errorf("the manual commit does not hold the chat's write: %+v, %v", diff, err)
	}
}
