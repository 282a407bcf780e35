package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// terminalGateway starts `gateway --terminal` reading from the returned
// pipe; exited yields its exit error once. It is killed, if still running,
// when the test ends.
func (h *harness) terminalGateway(t *testing.T) (stdin io.WriteCloser, out *testkit.Buffer, cmd *exec.Cmd, exited chan error) {
	t.Helper()
	cmd = exec.Command(binPath, "--config", h.cfgPath, "gateway", "--terminal")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out = &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	gone := make(chan struct{})
	go func() { err := cmd.Wait(); exited <- err; close(gone) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-gone
	})
	return stdin, out, cmd, exited
}

// The QA case: remember, /new, hi, and the gateway is killed while the
// archive of the old conversation hangs. The next gateway archives the
// set-aside conversation on start, once, and it does not come back as the
// live one.
func TestSetAsideConversationSurvivesAKill(t *testing.T) {
	h := newHarness(t)
	var hang atomic.Bool
	hang.Store(true)
	release := make(chan struct{})
	defer close(release)
	archiving := make(chan string, 4)
	var mu sync.Mutex
	var archives []string
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1].Content
		if !isArchiveCall(r) {
			return llmtest.Text("ok " + llmtest.Spoken(last))
		}
		mu.Lock()
		archives = append(archives, last)
		mu.Unlock()
		archiving <- last
		if hang.Load() {
			<-release // until the test ends: the process is killed first
		}
		return llmtest.Text("- The user's X is 1.")
	})

	stdin, out, first, exited := h.terminalGateway(t)
	if _, err := io.WriteString(stdin, "remember X=1\n/new\nhi\n"); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "ok hi")
	select {
	case <-archiving:
	case <-time.After(30 * time.Second):
		t.Fatalf("the archive after /new never started; log:\n%s", out.String())
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	hang.Store(false)

	// The next start archives it; the end of its input then waits for the
	// archive to be written.
	stdin, out, _, exited = h.terminalGateway(t)
	var sent string
	select {
	case sent = <-archiving:
	case <-time.After(30 * time.Second):
		t.Fatalf("the set-aside conversation was not archived by the next gateway; log:\n%s", out.String())
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("second gateway: %v\n%s", err, out.String())
	}
	if !strings.Contains(sent, "remember X=1") || strings.Contains(sent, "ok hi") {
		t.Errorf("the archive call held %q, want the set-aside conversation only", sent)
	}

	var entries []historyLine
	for _, l := range readHistory(t, h.ws) {
		if l.SessionKey == "terminal:default" {
			entries = append(entries, l)
		}
	}
	if len(entries) != 1 || !strings.Contains(entries[0].Content, "X is 1") || len(entries[0].Range) != 2 || entries[0].Range[0] != 0 || entries[0].Range[1] != 2 {
		t.Fatalf("history entries for terminal:default: %+v, want one for messages [0, 2)", entries)
	}
	aside, _ := filepath.Glob(filepath.Join(h.state, "sessions", "dGVybWluYWw6ZGVmYXVsdA.*.meta.json"))
	if len(aside) != 1 {
		t.Fatalf("set-aside metadata files: %v", aside)
	}
	raw, err := os.ReadFile(aside[0])
	if err != nil || !strings.Contains(string(raw), `"last_consolidated":2`) || !strings.Contains(aside[0], entries[0].SessionID) {
		t.Errorf("set-aside metadata %s: %s (%v), want last_consolidated 2 under id %s", aside[0], raw, err, entries[0].SessionID)
	}

	// The live conversation is still the one after /new.
	if r := h.run("chat", "-m", "/status"); r.code != 0 {
		t.Fatalf("/status: %d %s", r.code, r.stderr)
	}
	live, err := os.ReadFile(filepath.Join(h.state, "sessions", "dGVybWluYWw6ZGVmYXVsdA.jsonl"))
	if err != nil || strings.Contains(string(live), "X=1") || !strings.Contains(string(live), "ok hi") {
		t.Errorf("live conversation (%v):\n%s", err, live)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(archives) != 2 {
		t.Errorf("%d archive calls, want 2 (the hung one and the one after the restart)", len(archives))
	}
}
