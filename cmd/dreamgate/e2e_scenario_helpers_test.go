package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// terminalGateway is a running `dreamgate gateway --terminal` whose chat
// input is a pipe the test writes lines to.
type terminalGateway struct {
	cmd            *exec.Cmd
	in             io.WriteCloser
	stdout, stderr *testkit.Buffer
	exited         chan struct{}
}

func (h *harness) startTerminalGateway(t *testing.T) *terminalGateway {
	t.Helper()
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway", "--terminal")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &terminalGateway{cmd: cmd, in: in, stdout: &testkit.Buffer{}, stderr: &testkit.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = g.stdout, g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-g.exited
		}
	})
	return g
}

// say types one line and returns the output it produced, once that
// contains want.
func (g *terminalGateway) say(t *testing.T, line, want string) string {
	t.Helper()
	from := len(g.stdout.String())
	if _, err := io.WriteString(g.in, line+"\n"); err != nil {
		t.Fatalf("typing %q: %v", line, err)
	}
	var out string
	waitUntil(t, "the reply to "+line, g.stderr, func() bool {
		out = g.stdout.String()[from:]
		return strings.Contains(out, want)
	})
	return out
}

// leave ends the chat input, as Ctrl-D does, and waits for the gateway
// to stop.
func (g *terminalGateway) leave(t *testing.T) {
	t.Helper()
	g.in.Close()
	select {
	case <-g.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway kept running after its input ended; stderr:\n%s", g.stderr)
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("gateway exit %d; stderr:\n%s", code, g.stderr)
	}
}

// waitUntil waits for cond, which reads state another process writes:
// there is nothing to wait on but the state itself.
func waitUntil(t *testing.T, what string, log *testkit.Buffer, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("waited 60s for %s; log:\n%s", what, log)
		case <-tick.C:
		}
	}
}

// historyKeys returns the session keys of the history entries written so
// far, read while another process may be appending: a line not complete
// yet is skipped.
func historyKeys(ws string) []string {
	if keys, ok := historyKeysFromDatabase(ws); ok {
		return keys
	}
	data, err := os.ReadFile(filepath.Join(ws, "memory", "history.jsonl"))
	if err != nil {
		return nil
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		var e struct {
			SessionKey string `json:"session_key"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.SessionKey != "" {
			keys = append(keys, e.SessionKey)
		}
	}
	return keys
}

// sessionFile is the message file of the conversation key.
func (h *harness) sessionFile(key string) string {
	return filepath.Join(h.state, "sessions", base64.RawURLEncoding.EncodeToString([]byte(key))+".jsonl")
}

var messageTime = regexp.MustCompile(`"timestamp":"([^"]+)"`)

// age moves every message of the conversation key by d into the past, as
// if it had been that quiet since: the binary has no clock to turn, and
// idleCompactAfterMinutes counts whole minutes. The timestamps keep their
// length, so the byte offsets of the lines stay where the session's
// metadata says they are.
func (h *harness) age(t *testing.T, key string, d time.Duration) {
	t.Helper()
	path := h.sessionFile(key)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	aged := messageTime.ReplaceAllStringFunc(string(data), func(m string) string {
		ts, err := time.Parse(time.RFC3339Nano, messageTime.FindStringSubmatch(m)[1])
		if err != nil {
			t.Fatalf("message time %s: %v", m, err)
		}
		n++
		return `"timestamp":"` + ts.Add(-d).Format(time.RFC3339Nano) + `"`
	})
	if n == 0 || len(aged) != len(data) {
		t.Fatalf("aging %s: %d timestamps, %d -> %d bytes", key, n, len(data), len(aged))
	}
	if err := os.WriteFile(path, []byte(aged), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-d)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
}

// git runs the real git command line in dir.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
