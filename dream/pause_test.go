package dream

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// While a backup pauses Dream, a Dream (cron, /dream, another process) and
// a restore are refused as busy; a pause asked for while a Dream runs
// waits for it, says so once, and then runs.
func TestPauseHoldsTheDreamLock(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Ledger().Pause(t.Context(), nil, func() error {
		if _, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil); !errors.Is(err, ErrAlreadyRunning) {
			t.Errorf("Run while paused: %v, want busy", err)
		}
		if _, err := d.Restore("abcd", AllScopes(), RestoreOptions{}); !errors.Is(err, ErrAlreadyRunning) {
			t.Errorf("Restore while paused: %v, want busy", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply {
		close(entered)
		<-release
		return llmtest.Text("[SKIP]")
	})
	ran := make(chan error, 1)
	go func() {
		_, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
		ran <- err
	}()
	<-entered
	waited, paused := make(chan struct{}), make(chan error, 1)
	go func() {
		paused <- d.Ledger().Pause(t.Context(), func(time.Time) { close(waited) }, func() error {
			select {
			case <-release: // the Dream could go on, and has ended
				return nil
			default:
				return errors.New("paused while the Dream still ran")
			}
		})
	}()
	<-waited
	close(release)
	if err := <-paused; err != nil {
		t.Error(err)
	}
	if err := <-ran; err != nil {
		t.Errorf("the Dream: %v", err)
	}
}
