//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scenario input that cannot be played is refused up front with exit 2,
// before any model call: an endless file, seeded names the file system or
// the workspace cannot take.
func TestEvalRefusesBadInputUpFront(t *testing.T) {
	h := evalHarness(t)
	scenario := func(files string) string {
		p := filepath.Join(t.TempDir(), "s.json")
		body := `{"name": "s", "sessions": [{"key": "a", "turns": ["hi"]}], "expect": [{"absent": "x"}], "files": {` + files + `}}`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("n", 300)
	cases := []struct{ name, path, want string }{
		{"endless file", "/dev/zero", "larger than 4 MiB"},
		{"NUL in a name", scenario(`"a\u0000b": "y"`), "control character"},
		{"300-character name", scenario(`"` + long + `": "y"`), "too long a name"},
		{"a file named memory", scenario(`"memory": "y"`), "kept by dreamgate"},
		{"a template folder", scenario(`"prompts": "y"`), "folder of the workspace template"},
		{"inside a template file", scenario(`"SOUL.md/notes": "y"`), `inside "SOUL.md"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run("eval", "--scenario", tc.path)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", r.code, tc.want, r.stderr)
			}
		})
	}
	if n := len(h.llm.Requests()); n != 0 {
		t.Errorf("%d model calls for scenarios refused up front", n)
	}
}

// SIGTERM ends an eval that waits on a FIFO whose writer sends nothing.
func TestEvalHonoursSIGTERMWhileReading(t *testing.T) {
	h := evalHarness(t)
	fifo := filepath.Join(t.TempDir(), "scenario.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cmd := exec.Command(binPath, "--config", h.cfgPath, "eval", "--scenario", fifo)
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Opening for writing returns once dreamgate has opened the FIFO to
	// read it: its signal handler is in place and it is waiting for data.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("still reading 30 s after SIGTERM; stderr:\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "interrupted while reading the scenario") {
		t.Errorf("exit %d; stderr:\n%s", code, errb.String())
	}
}
