package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/llm"
)

// waitingChannel's Send waits, as an adapter waiting out a long rate limit
// does, until its context ends, or answers err at once when set.
type waitingChannel struct {
	name    string
	sending chan channels.Outbound
	err     error
}

func (c *waitingChannel) Name() string { return c.name }
func (c *waitingChannel) Run(ctx context.Context, _ channels.Sink) error {
	<-ctx.Done()
	return nil
}
func (c *waitingChannel) Send(ctx context.Context, out channels.Outbound) error {
	if c.err != nil {
		return c.err
	}
	c.sending <- out
	<-ctx.Done()
	return ctx.Err()
}

// A reply waiting out a rate limit does not hold shutdown past its bound:
// once shutdown runs out of time the send's context ends.
func TestShutdownDoesNotWaitForARetryingSend(t *testing.T) {
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return textReply("an answer"), nil
	}, nil)
	ch := &waitingChannel{name: "slow", sending: make(chan channels.Outbound, 4)}
	env.g.AddChannel(ch)
	in := inbound("rl", "hello")
	in.Channel = "slow"
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.sending:
	case <-time.After(10 * time.Second):
		t.Fatal("the reply was never sent")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- env.g.Shutdown(ctx) }()
	cancel() // shutdown's bound has passed
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waits for a send after its context ended")
	}
	wait(t, done)
}

// A reply the channel dropped after its retry window is logged by the
// channel, not again here; other failures are logged here with the kind.
func TestSendLogsAFailureOnce(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return textReply("an answer"), nil
	}, func(_ *Config, d *Deps) {
		d.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	})
	for _, tt := range []struct {
		err     error
		wantLog bool
	}{
		{&channels.DroppedError{Tried: 5 * time.Minute, Attempts: 40, Last: errors.New("HTTP 429")}, false},
		{errors.New("HTTP 403"), true},
	} {
		mu.Lock()
		logs.Reset()
		mu.Unlock()
		env.g.AddChannel(&waitingChannel{name: "failing", err: tt.err})
		in := inbound("f", "hello")
		in.Channel = "failing"
		done, err := env.g.Submit(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, done)
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		if logged := strings.Contains(got, "reply not delivered"); logged != tt.wantLog {
			t.Errorf("%v: logged %v, want %v:\n%s", tt.err, logged, tt.wantLog, got)
		}
		if tt.wantLog && !strings.Contains(got, "kind=") {
			t.Errorf("the line does not name the kind:\n%s", got)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// blockingDreamer is a Dream that runs until its context ends.
type blockingDreamer struct {
	started  chan struct{}
	canceled chan struct{}
}

func (d *blockingDreamer) Run(ctx context.Context, _ string, _ dream.Scopes, _ func(string)) (dream.Report, error) {
	close(d.started)
	<-ctx.Done()
	close(d.canceled)
	return dream.Report{Outcome: dream.OutcomeFailed, Reason: "the Dream was cancelled"}, ctx.Err()
}
func (d *blockingDreamer) Restore(string, dream.Scopes, dream.RestoreOptions) (dream.RestoreResult, error) {
	return dream.RestoreResult{}, nil
}
func (d *blockingDreamer) PlanRestore(string, dream.Scopes) (dream.RestorePlan, error) {
	return dream.RestorePlan{}, nil
}
func (d *blockingDreamer) Status(dream.Scopes) dream.Status { return dream.Status{} }

// A /dream started from chat does not hold a stopping service for Dream's
// half hour: CancelBackground cancels it, and Shutdown waits for it to end
// and returns.
func TestShutdownCancelsDream(t *testing.T) {
	d := &blockingDreamer{started: make(chan struct{}), canceled: make(chan struct{})}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("ok"), nil
	}, func(_ *Config, deps *Deps) { deps.Dream = d })
	done, err := env.g.Submit(t.Context(), inbound("s1", "/dream"))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	select {
	case <-d.started:
	case <-time.After(10 * time.Second):
		t.Fatal("Dream did not start")
	}
	// The shutdown budget is far longer than the test may take: only a
	// cancelled Dream lets Shutdown return in time.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	stopped := make(chan error, 1)
	env.g.CancelBackground()
	go func() { stopped <- env.g.Shutdown(ctx) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waited for a running /dream instead of cancelling it")
	}
	select {
	case <-d.canceled:
	default:
		t.Error("Shutdown returned while the Dream was still running")
	}
	var last channels.Outbound
	for len(env.ch.got) > 0 {
		last = <-env.ch.got
	}
	if !strings.Contains(last.Text, "cancelled") {
		t.Errorf("the /dream reply after shutdown is %q, want it to say the Dream was cancelled", last.Text)
	}
}

// A turn's answer carries its message's answer key; a first answer is not
// looked for before it is posted.
func TestAnswerCarriesItsKey(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("hi"), nil }, nil)
	in := inbound("keyed", "hello")
	done, err := env.g.Submit(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	o := env.ch.next(t)
	if o.Key != channels.AnswerKey(in) || o.Key == "" || o.Again {
		t.Errorf("answer %+v: want key %q, not sent again", o, channels.AnswerKey(in))
	}
}
