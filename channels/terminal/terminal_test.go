package terminal

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
)

type sink struct {
	mu  sync.Mutex
	got []channels.Inbound
	err error
}

func (s *sink) Deliver(_ context.Context, in channels.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, in)
	return s.err
}

// runToEOF runs a until it has read its input to the end, then stops it,
// and returns what Run returned.
func runToEOF(t *testing.T, a *Adapter, s channels.Sink) error {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- a.Run(ctx, s) }()
	<-a.EOF()
	cancel()
	return <-done
}

func TestRunDeliversLinesUntilEOF(t *testing.T) {
	var out, errOut bytes.Buffer
	made := time.Now()
	a := New(Config{In: strings.NewReader("hello\n\n  /help  \nbye"), Out: &out, Err: &errOut, Session: "work", User: "ada"})
	if h := a.Health(); h.State != channels.StateConnected || h.Since.Before(made) || h.Since.After(time.Now()) {
		t.Errorf("health before EOF = %+v; want connected since it was made", h)
	}
	s := &sink{}
	if err := runToEOF(t, a, s); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, in := range s.got {
		texts = append(texts, in.Text)
		if in.SessionKey != "terminal:work" || !in.Local || in.Channel != Name || in.SenderID != "ada" {
			t.Errorf("inbound = %+v", in)
		}
		if in.Audience.Kind != audience.Operator || in.Audience.Home() != audience.Default {
			t.Errorf("audience = %q, want the operator's", in.Audience)
		}
	}
	if got := strings.Join(texts, "|"); got != "hello|/help|bye" {
		t.Errorf("delivered %q", got)
	}
	if n := a.NotSent(); n != 0 {
		t.Errorf("NotSent = %d after every line was sent", n)
	}
	if h := a.Health(); h.State != channels.StateStopped || h.Since.Before(made) || h.Since.After(time.Now()) {
		t.Errorf("health after EOF = %+v; want stopped since the input ended", h)
	}
}

func TestSendSeparatesRepliesFromErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	a := New(Config{Out: &out, Err: &errOut})
	in := a.Inbound("hi")
	_ = a.Send(t.Context(), channels.ReplyTo(in, channels.KindReply, "the answer"))
	_ = a.Send(t.Context(), channels.ReplyTo(in, channels.KindProgress, "Dreaming…"))
	_ = a.Send(t.Context(), channels.ReplyTo(in, channels.KindError, "The model is unavailable."))
	if out.String() != "the answer\n" {
		t.Errorf("stdout = %q", out.String())
	}
	if errOut.String() != "Dreaming…\nThe model is unavailable.\n" {
		t.Errorf("stderr = %q", errOut.String())
	}
	// The failed line counts for the exit status; the answer and the
	// progress line do not.
	if n := a.Failed(); n != 1 {
		t.Errorf("Failed = %d, want the one error", n)
	}
}

func TestRefusedDeliveryIsSaidOnStderr(t *testing.T) {
	var out, errOut bytes.Buffer
	a := New(Config{In: strings.NewReader("one\n"), Out: &out, Err: &errOut})
	s := &sink{err: channels.ErrBusy}
	_ = runToEOF(t, a, s)
	if !strings.Contains(errOut.String(), "Not sent") {
		t.Errorf("stderr = %q", errOut.String())
	}
	// The program's exit status says so too.
	if n := a.NotSent(); n != 1 {
		t.Errorf("NotSent = %d, want 1", n)
	}
}

func TestStream(t *testing.T) {
	var out, errOut bytes.Buffer
	quiet := New(Config{Out: &out, Err: &errOut})
	if quiet.StartStream(quiet.Inbound("hi")) != nil {
		t.Fatal("a terminal without Stream streams")
	}

	a := New(Config{Out: &out, Err: &errOut, Stream: true, Prompt: "> "})
	in := a.Inbound("hi")
	st := a.StartStream(in)
	st.Write("Let me ")
	st.Write("look.")
	st.Break()
	st.Write("Hello")
	st.Write(", Ana.")
	if err := a.Send(t.Context(), channels.Outbound{Text: "Hello, Ana.", Streamed: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "Let me look.\nHello, Ana.\n> "; got != want {
		t.Errorf("streamed reply printed %q, want %q", got, want)
	}

	// A stream cut short by an error: its line is ended before anything
	// else is printed, and the error goes to stderr.
	out.Reset()
	st = a.StartStream(in)
	st.Write("Half an ans")
	if err := a.Send(t.Context(), channels.Outbound{Kind: channels.KindError, Text: "The answer broke off."}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "Half an ans\n> "; got != want {
		t.Errorf("stdout after a broken stream = %q, want %q", got, want)
	}
	if got := errOut.String(); got != "The answer broke off.\n" {
		t.Errorf("stderr = %q", got)
	}

	// A reply that was not streamed in full is printed whole.
	out.Reset()
	st = a.StartStream(in)
	st.Write("thinking")
	st.Break()
	if err := a.Send(t.Context(), channels.Outbound{Text: "The final answer."}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "thinking\nThe final answer.\n> "; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

func TestQuitLeavesWithoutReachingTheGateway(t *testing.T) {
	var out, errOut bytes.Buffer
	// The lines after /quit are never read: the person has left.
	a := New(Config{In: strings.NewReader("hello\n /QUIT \nafter\n"), Out: &out, Err: &errOut, Prompt: "> "})
	s := &sink{}
	if err := runToEOF(t, a, s); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 1 || s.got[0].Text != "hello" {
		t.Errorf("delivered %+v, want only hello", s.got)
	}
	if h := a.Health(); h.State != channels.StateStopped {
		t.Errorf("health after /quit = %+v", h)
	}
}

func TestCtrlDEndsThePromptLine(t *testing.T) {
	var out, errOut bytes.Buffer
	a := New(Config{In: strings.NewReader(""), Out: &out, Err: &errOut, Prompt: "> "})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- a.Run(ctx, &sink{}) }()
	<-a.EOF()
	cancel()
	<-done
	if got := out.String(); got != "> \n" {
		t.Errorf("stdout = %q, want the prompt and a newline", got)
	}
}

// Reasoning is not streamed, and a reply streamed without it ends its line
// only.
func TestStreamHidesReasoning(t *testing.T) {
	var out bytes.Buffer
	a := New(Config{Out: &out, Err: &bytes.Buffer{}, Stream: true})
	in := a.Inbound("hi")
	st := a.StartStream(in)
	for _, f := range []string{"<think>", "secret", "</think>", "The visible", " answer."} {
		st.Write(f)
	}
	_ = a.Send(t.Context(), channels.Outbound{Kind: channels.KindReply, Text: "The visible answer.", Streamed: true})
	if out.String() != "The visible answer.\n" {
		t.Errorf("stdout = %q", out.String())
	}
}
