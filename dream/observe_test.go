package dream

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

type dreamsSeen struct {
	outcomes []string
	took     []time.Duration
}

func (d *dreamsSeen) DreamDone(outcome string, took time.Duration) {
	d.outcomes = append(d.outcomes, outcome)
	d.took = append(d.took, took)
}

// Every finished run is reported with its outcome and duration; a run
// refused because another holds the lock is not a run.
func TestObserverSeesEveryFinishedRun(t *testing.T) {
	e := newEnv(t)
	seen := &dreamsSeen{}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs), Observer: seen})
	if err != nil {
		t.Fatal(err)
	}
	var reps []Report
	run := func() {
		t.Helper()
		rep, _ := d.Run(t.Context(), TriggerManual, AllScopes(), nil)
		reps = append(reps, rep)
	}

	run() // nothing new
	e.hist.seed(t, 0, 2, func(i int) string { return "- User prefers tea" })
	e.srv.Push(llmtest.Status(400, ""))
	run() // failed
	e.srv.Push(
		llmtest.Text("[USER] prefers tea"),
		calls(editCall("USER.md", "- Name: Ana.\n", "- Name: Ana.\n- Prefers tea.\n")),
		llmtest.Text("Done."),
	)
	run() // completed

	release, err := d.ledger.lock.acquire(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); !errors.As(err, new(*BusyError)) {
		t.Fatalf("Run while locked: %v, want a BusyError", err)
	}
	release()

	want := []string{string(OutcomeNothingNew), string(OutcomeFailed), string(OutcomeCompleted)}
	if !slices.Equal(seen.outcomes, want) {
		t.Fatalf("outcomes = %q, want %q", seen.outcomes, want)
	}
	for i, rep := range reps {
		if seen.took[i] != rep.Duration {
			t.Errorf("run %d: reported %v, the report says %v", i, seen.took[i], rep.Duration)
		}
	}
}
