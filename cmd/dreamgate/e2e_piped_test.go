package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// pipedScript is n numbered lines, as a script would pipe them in.
func pipedScript(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// echoModel answers each message with "re: " and its text.
func echoModel(h *harness) {
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("re: " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
	})
}

// answeredInOrder checks that out holds "re: line i" for every i < n, in
// order.
func answeredInOrder(t *testing.T, out string, n int) {
	t.Helper()
	at := 0
	for i := range n {
		want := fmt.Sprintf("re: line %d\n", i)
		j := strings.Index(out[at:], want)
		if j < 0 {
			t.Fatalf("line %d not answered (or out of order); %d lines of output", i, strings.Count(out, "\n"))
		}
		at += j + len(want)
	}
}

// Far more lines than a conversation's queue holds (32) are piped in:
// the reader waits for room instead of refusing them, and every line is
// answered, in order, by the chat and by the gateway's terminal.
func TestPipedLinesWaitForRoom(t *testing.T) {
	const n = 200
	for _, args := range [][]string{{"chat"}, {"gateway", "--terminal"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newHarness(t)
			echoModel(h)
			cmd := exec.Command(binPath, append([]string{"--config", h.cfgPath}, args...)...)
			cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
			cmd.Stdin = strings.NewReader(pipedScript(n))
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v; stderr:\n%s", err, tail(errb.String(), 2000))
			}
			if strings.Contains(errb.String(), "Not sent") {
				t.Errorf("lines refused:\n%s", tail(errb.String(), 2000))
			}
			answeredInOrder(t, out.String(), n)
		})
	}
}

// A line that is refused all the same (here: too long to send) fails the
// run, although the lines around it are answered.
func TestPipedLineNotSentFailsTheRun(t *testing.T) {
	h := newHarness(t)
	echoModel(h)
	input := "line 0\n" + strings.Repeat("x", 2<<20) + "\nline 1\n"
	for _, args := range [][]string{{"chat"}, {"gateway", "--terminal"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(binPath, append([]string{"--config", h.cfgPath}, args...)...)
			cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
			cmd.Stdin = strings.NewReader(input)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "1 line(s) of input were not sent") {
				t.Errorf("exit %d; stderr:\n%s", code, tail(errb.String(), 2000))
			}
			answeredInOrder(t, out.String(), 2)
		})
	}
}

// When the piped input ends, the lines still queued are answered however
// long they take: the shutdown's grace (here next to none) starts only
// with a signal.
func TestPipedLinesQueuedAtEOFAreAnswered(t *testing.T) {
	const n = 80
	h := newHarness(t)
	echoModel(h)
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(pipedScript(n)), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" }, isTTY: func(any) bool { return false },
		shutdownGrace: time.Nanosecond}
	if code := runEnv(t.Context(), e, []string{"--config", h.cfgPath, "chat"}); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, tail(errb.String(), 2000))
	}
	answeredInOrder(t, out.String(), n)
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// /stop from a script (piped, or chat -m) waits its turn: nothing is left
// running then, and it says so, instead of cancelling itself in silence.
func TestScriptedStopSaysNothingIsRunning(t *testing.T) {
	h := newHarness(t)
	echoModel(h)
	r := h.run("chat", "-m", "/stop")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "Nothing is running here." {
		t.Errorf("chat -m /stop: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command(binPath, "--config", h.cfgPath, "chat")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader("line 0\n/stop\nline 1\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errb.String())
	}
	if want := "re: line 0\nNothing is running here.\nre: line 1\n"; out.String() != want {
		t.Errorf("piped: stdout %q, want %q", out.String(), want)
	}
}

// pipe runs dreamgate with the harness config and input on stdin.
func (h *harness) pipe(t *testing.T, input string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"--config", h.cfgPath}, args...)...)
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return runResult{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// A piped /dream, even as the last line, runs to its end before the end of
// the input stops the gateway (make run pipes into gateway --terminal):
// the fact told before it is in memory and the reply says so.
func TestPipedDreamFinishesBeforeTheEnd(t *testing.T) {
	for _, args := range [][]string{{"gateway", "--terminal"}, {"chat"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newHarness(t)
			h.llm.SetResponder(llmtest.MemoryModel)
			r := h.pipe(t, "I live in Lisbon with my cat.\n/dream\n", args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, tail(r.stderr, 2000))
			}
			if !strings.Contains(r.stdout, "Dream: 1 change to USER.md") {
				t.Errorf("the Dream's reply is missing; stdout:\n%s\nstderr:\n%s", r.stdout, tail(r.stderr, 2000))
			}
			user := readMemoryFile(t, h.ws, "USER.md")
			if !strings.Contains(string(user), "I live in Lisbon with my cat.") {
				t.Errorf("USER.md lacks the fact:\n%s", user)
			}
		})
	}
}

// A line whose model call fails is answered with one sentence on stderr,
// and the run's exit status is 1 (the lines around it are answered): a
// script that pipes questions wants to know.
func TestPipedLineWhoseModelCallFailsFailsTheRun(t *testing.T) {
	for _, args := range [][]string{{"gateway", "--terminal"}, {"chat"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newHarness(t)
			h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
				if text := llmtest.Spoken(r.Messages[len(r.Messages)-1].Content); text == "line 1" {
					return llmtest.Status(400, "") // refused: not retried
				}
				return llmtest.Text("re: " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
			})
			r := h.pipe(t, pipedScript(3), args...)
			if r.code != 1 || !strings.Contains(r.stderr, "1 line(s) of input were not answered") {
				t.Errorf("exit %d; stderr:\n%s", r.code, tail(r.stderr, 2000))
			}
			if !strings.Contains(r.stdout, "re: line 0\n") || !strings.Contains(r.stdout, "re: line 2\n") {
				t.Errorf("the other lines are not answered; stdout:\n%s", r.stdout)
			}
		})
	}
}
