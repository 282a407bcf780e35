package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// At a terminal the chat edits lines as a shell does: the arrow keys move
// in the line, Up brings back the line sent before. The binary runs on a
// pseudo-terminal, as at a person's terminal (skipped where there is none).
func TestTerminalLineEditingThroughTheBinary(t *testing.T) {
	for _, args := range [][]string{{"chat"}, {"gateway"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newHarness(t)
			echoModel(h)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("skipped: no pseudo-terminal here (%v)", err)
			}
			defer ptmx.Close()
			cmd := exec.Command(binPath, append([]string{"--config", h.cfgPath}, args...)...)
			cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC", "TERM=xterm"}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close()
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			defer func() {
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			}()
			screen := &testkit.Buffer{}
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := ptmx.Read(buf)
					screen.Write(buf[:n])
					if err != nil {
						return
					}
				}
			}()
			typeKeys := func(keys string) {
				if _, err := ptmx.WriteString(keys); err != nil {
					t.Fatal(err)
				}
			}
			screen.WaitFor(t, "> ")
			// "wrld", back to the start for "hello ", to the end and three
			// to the left for the missing "o".
			typeKeys("wrld\x01hello \x05\x1b[D\x1b[D\x1b[Do\r")
			screen.WaitFor(t, "re: hello world")
			typeKeys("\x1b[A\r") // Up: the line before, sent again
			screen.WaitForCount(t, "re: hello world", 2)
			typeKeys("\x04") // Ctrl-D leaves
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("Ctrl-D did not end the chat; screen:\n%q", screen.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit %d; screen:\n%q", code, screen.String())
			}
		})
	}
}
