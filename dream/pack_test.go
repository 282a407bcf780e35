package dream

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// packCounter is the real memory repository with its Pack observed, and
// optionally failing.
type packCounter struct {
	*gitstore.Store
	calls int
	err   error
}

func (p *packCounter) Pack() (int, error) {
	p.calls++
	if p.err != nil {
		return 0, p.err
	}
	return p.Store.Pack()
}

// A run that committed gives the repository a chance to pack; a run that
// changed nothing does not touch it; a failed pack does not fail the run.
func TestPackAfterCommittingRuns(t *testing.T) {
	for _, tt := range []struct {
		name    string
		packErr error
	}{{"pack works", nil}, {"pack fails", errors.New("disk full")}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			repo := &packCounter{Store: e.repo, err: tt.packErr}
			d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: repo, Logger: slog.New(e.logs)})
			if err != nil {
				t.Fatal(err)
			}

			// Nothing new: no model call, no commit, no pack.
			if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
				t.Fatal(err)
			}
			if repo.calls != 0 {
				t.Fatalf("Pack called %d times by a run that committed nothing", repo.calls)
			}

			e.hist.seed(t, 0, 1, func(int) string { return "- User prefers tea" })
			e.srv.Push(
				llmtest.Text("[USER] prefers tea"),
				calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Prefers tea.\n")),
				llmtest.Text("done"),
			)
			rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
			if err != nil || rep.Outcome != OutcomeCompleted || rep.Commit == "" {
				t.Fatalf("run = %+v, %v; want a completed run with a commit", rep, err)
			}
			if repo.calls != 1 {
				t.Errorf("Pack called %d times after a committing run, want 1", repo.calls)
			}
			warned := len(e.logs.Find(slog.LevelWarn, "dream could not pack the memory repository")) > 0
			if warned != (tt.packErr != nil) {
				t.Errorf("pack warning logged = %v with pack error %v", warned, tt.packErr)
			}
		})
	}
}
