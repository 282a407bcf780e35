package terminal

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// Keys as a terminal sends them.
const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	keyHome  = "\x01" // Ctrl-A
	keyEnd   = "\x05" // Ctrl-E
	keyEnter = "\r"
	keyEOF   = "\x04" // Ctrl-D
)

// openPTY is a pseudo-terminal: the person types into ptmx, the chat reads
// and writes tty. The test is skipped where there is none.
func openPTY(t *testing.T) (ptmx, tty *os.File, screen *testkit.Buffer) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("skipped: no pseudo-terminal here (%v)", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	// What the chat draws must be read, or its writes would block once the
	// pty's buffer is full.
	screen = &testkit.Buffer{}
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
	return ptmx, tty, screen
}

// delivered waits until s has n lines.
func (s *sink) delivered(t *testing.T, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		var got []string
		for _, in := range s.got {
			got = append(got, in.Text)
		}
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d line(s) delivered, want %d: %q", len(got), n, got)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// At a terminal the person edits the line before sending it, and Up brings
// back the line sent before; the terminal's mode is given back when they
// leave.
func TestEditorEditsLinesAndKeepsHistory(t *testing.T) {
	ptmx, tty, screen := openPTY(t)
	before, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	a := New(Config{In: tty, Out: tty, Err: tty, Prompt: "> ", Interactive: true, Edit: true, OutTerminal: true, ErrTerminal: true})
	s := &sink{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, s) }()

	type_ := func(keys string) {
		if _, err := ptmx.WriteString(keys); err != nil {
			t.Fatal(err)
		}
	}
	// Keys typed before the editor took the terminal would be read by the
	// terminal's own line discipline: wait for its prompt.
	screen.WaitFor(t, "> ")
	type_("wrld" + keyHome + "hello " + keyEnd + keyLeft + keyLeft + keyLeft + "o" + keyEnter)
	if got := s.delivered(t, 1); got[0] != "hello world" {
		t.Fatalf("delivered %q, want the line as edited", got[0])
	}
	// A reply printed while the next line is being typed lands above it.
	type_("second")
	if err := a.Send(t.Context(), channels.ReplyTo(a.Inbound("hello world"), channels.KindReply, "the answer")); err != nil {
		t.Fatal(err)
	}
	type_(keyEnter + keyUp + keyUp + keyEnter)
	got := s.delivered(t, 3)
	if got[1] != "second" || got[2] != "hello world" {
		t.Errorf("delivered %q; want \"second\", then the first line again from history", got)
	}
	if !strings.Contains(screen.String(), "the answer\r\n") {
		t.Errorf("the reply is not on the screen as a line of its own:\n%q", screen.String())
	}
	type_(keyEOF)
	select {
	case <-a.EOF():
	case <-time.After(30 * time.Second):
		t.Fatal("Ctrl-D did not end the input")
	}
	after, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Error("the terminal was left in raw mode")
	}
	cancel()
	<-done
}

// Without a terminal, Edit changes nothing: piped lines are read as before.
func TestEditWithoutATerminalReadsAsBefore(t *testing.T) {
	a := New(Config{In: strings.NewReader("one\ntwo\n"), Edit: true})
	s := &sink{}
	if err := runToEOF(t, a, s); err != nil {
		t.Fatal(err)
	}
	if got := s.delivered(t, 2); strings.Join(got, "|") != "one|two" {
		t.Errorf("delivered %q", got)
	}
}
