package dream

import (
	"bufio"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// TestTwoDreamsInOneProcess: while one Dream runs, a second Run and a
// Restore are refused at once with the start time; the first is unharmed.
func TestTwoDreamsInOneProcess(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	start := time.Date(2026, 4, 3, 10, 0, 0, 0, time.UTC)
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo,
		Logger: slog.New(e.logs), Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply {
		close(entered)
		<-release
		return llmtest.Text("[SKIP]")
	})
	type result struct {
		rep Report
		err error
	}
	first := make(chan result, 1)
	go func() {
		rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
		first <- result{rep, err}
	}()
	<-entered

	rep, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil)
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run: %v", err)
	}
	if !busy.Since.Equal(start) || busy.Elsewhere {
		t.Errorf("busy = %+v, want since %v in this process", busy, start)
	}
	if rep.Outcome != "" {
		t.Errorf("refused run has outcome %q", rep.Outcome)
	}
	if _, err := d.Restore("abcd", AllScopes(), RestoreOptions{}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("Restore during a Dream: %v", err)
	}
	if st := d.Status(AllScopes()); !st.Running || !st.Since.Equal(start) {
		t.Errorf("status while running = %+v", st)
	}

	close(release)
	r := <-first
	if r.err != nil || r.rep.Outcome != OutcomeCompleted {
		t.Fatalf("first run: %+v, %v", r.rep, r.err)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1 (the refused run made none)", n)
	}
	// The lock is free again.
	if _, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil); err != nil {
		t.Errorf("run after the first ended: %v", err)
	}
}

// TestDreamInAnotherProcess: a Dream held by another process (the gateway
// beside a CLI run) refuses this one at once, with its start time.
func TestDreamInAnotherProcess(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 2, func(int) string { return "- x" })
	since := time.Date(2026, 4, 3, 9, 59, 48, 0, time.UTC)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdLockEnv+"="+e.ws, holdLockSinceEnv+"="+strconv.FormatInt(since.UnixNano(), 10))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	d := e.dreamer(Config{})
	_, err = d.Run(t.Context(), TriggerCLI, AllScopes(), nil)
	var busy *BusyError
	if !errors.As(err, &busy) || !busy.Elsewhere || !busy.Since.Equal(since) {
		t.Fatalf("Run while another process dreams: %v (%+v)", err, busy)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("model requests = %d, want 0", n)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	e.srv.Push(llmtest.Text("[SKIP]"))
	if rep, err := d.Run(t.Context(), TriggerCLI, AllScopes(), nil); err != nil || rep.Outcome != OutcomeCompleted {
		t.Errorf("Run after the other process ended: %+v, %v", rep, err)
	}
}
