package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A gateway with the terminal holds terminal:default once it has spoken
// there: a `chat -m` on the same conversation is refused (exit 1, one
// sentence naming the gateway's pid) and writes nothing to its file; the
// same command on another session is answered; once the gateway is gone,
// the default conversation is free again.
func TestChatBesideTerminalGatewayIsRefused(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("ok " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
	})
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway", "--terminal")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = stdin.Close() // EOF ends a terminal gateway
		if err := <-exited; err != nil {
			t.Errorf("gateway: %v\n%s", err, out.String())
		}
	}
	defer stop()

	if _, err := fmt.Fprintln(stdin, "remember X=1"); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "ok remember X=1")

	r := h.run("chat", "-m", "remember X=2")
	want := fmt.Sprintf("This conversation is open in another dreamgate process (pid %d); use --session NAME for another one.", cmd.Process.Pid)
	if r.code != 1 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("chat -m beside the gateway: exit %d, stderr %q, stdout %q; want exit 1 and %q", r.code, r.stderr, r.stdout, want)
	}
	oneSentence(t, r.stderr)

	if r := h.run("chat", "--session", "other", "-m", "hi"); r.code != 0 || !strings.Contains(r.stdout, "ok hi") {
		t.Errorf("chat --session other: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	sessFile := filepath.Join(h.state, "sessions", "dGVybWluYWw6ZGVmYXVsdA.jsonl")
	raw, err := os.ReadFile(sessFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "X=2") {
		t.Errorf("the refused run wrote to the gateway's conversation:\n%s", raw)
	}

	stop()
	if r := h.run("chat", "-m", "remember X=3"); r.code != 0 || !strings.Contains(r.stdout, "ok remember X=3") {
		t.Errorf("chat -m after the gateway stopped: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
