package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// fakeClock moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// slowSender is a channel whose sends take sendTime on the clock.
type slowSender struct {
	*recorder
	clock *fakeClock
}

func (s slowSender) Send(ctx context.Context, out channels.Outbound) error {
	s.clock.advance(2 * time.Second)
	return s.recorder.Send(ctx, out)
}

type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *observed) TurnDone(channel, outcome string, model, gw time.Duration) {
	o.add(fmt.Sprintf("turn %s %s model=%v gateway=%v", channel, outcome, model, gw))
}

func (o *observed) CommandDone(channel, command string) { o.add("command " + channel + " " + command) }
func (o *observed) Busy(channel string)                 { o.add("busy " + channel) }

// sorted returns the events in a stable order: a /stop and the turn it
// stops finish on two goroutines.
func (o *observed) sorted() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.events)
	slices.Sort(out)
	return out
}

func TestObserverSeesTurnsCommandsAndBusy(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	obs := &observed{}
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		switch llmtest.Spoken(req.Messages[len(req.Messages)-1].Content) {
		case "block": // until released
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		case "hold": // until stopped
			started <- struct{}{}
			<-ctx.Done()
			return llm.Response{}, ctx.Err()
		case "fail":
			return llm.Response{}, &llm.Error{Kind: llm.ErrRejected, Status: 400}
		}
		clock.advance(3 * time.Second)
		return textReply("hi"), nil
	}, func(c *Config, d *Deps) {
		c.QueueSize = 1
		d.Observer = obs
		d.Now = clock.now
	})
	// Sends take 2s on the clock, model answers 3s: the two parts of a
	// turn's time are told apart exactly.
	ch := slowSender{recorder: newRecorder("timed"), clock: clock}
	env.g.AddChannel(ch)
	in := func(text string) channels.Inbound {
		m := inbound("s1", text)
		m.Channel = "timed"
		return m
	}
	submit := func(text string) <-chan Result {
		t.Helper()
		done, err := env.g.Submit(t.Context(), in(text))
		if err != nil {
			t.Fatalf("submit %q: %v", text, err)
		}
		return done
	}

	wait(t, submit("hello"))
	if r := wait(t, submit("fail")); r.Err == nil {
		t.Fatal("the failing turn did not fail")
	}
	wait(t, submit("/help"))
	wait(t, submit("/nosuch"))

	// One turn runs, one waits, the next is refused.
	blocked := submit("block")
	<-started
	queued := submit("hello")
	if n := env.g.QueueDepth(); n != 1 {
		t.Errorf("QueueDepth = %d, want 1", n)
	}
	if _, err := env.g.Submit(t.Context(), in("one too many")); !errors.Is(err, channels.ErrBusy) {
		t.Fatalf("third message: err %v, want ErrBusy", err)
	}
	close(release)
	wait(t, blocked)
	wait(t, queued)
	if n := env.g.QueueDepth(); n != 0 {
		t.Errorf("QueueDepth after the queue drained = %d, want 0", n)
	}

	held := submit("hold")
	<-started
	wait(t, submit("/stop"))
	if r := wait(t, held); !errors.Is(r.Err, errStopped) {
		t.Fatalf("held turn: %v, want stopped", r.Err)
	}

	want := []string{
		"turn timed ok model=3s gateway=2s", // hello
		"turn timed model-error model=0s gateway=2s",
		"command timed /help",
		"command timed unknown",
		"turn timed ok model=3s gateway=2s", // block
		"busy timed",
		"turn timed ok model=3s gateway=2s", // the queued hello
		"command timed /stop",
		"turn timed stopped model=0s gateway=2s",
	}
	slices.Sort(want)
	if got := obs.sorted(); !slices.Equal(got, want) {
		t.Errorf("events:\n%q\nwant\n%q", got, want)
	}
}

func TestTurnOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, OutcomeOK},
		{errStopped, OutcomeStopped},
		{context.Canceled, OutcomeStopped},
		{&llm.Error{Kind: llm.ErrUnavailable}, OutcomeModelError},
		{errPromptTooLarge, OutcomeError},
	} {
		if got := turnOutcome(tc.err); got != tc.want {
			t.Errorf("turnOutcome(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// seenAtSend is a channel that notes, as each reply goes out, what the
// Observer had been told by then.
type seenAtSend struct {
	*recorder
	obs  *observed
	mu   sync.Mutex
	seen [][]string
}

func (s *seenAtSend) Send(ctx context.Context, out channels.Outbound) error {
	s.mu.Lock()
	s.seen = append(s.seen, s.obs.sorted())
	s.mu.Unlock()
	return s.recorder.Send(ctx, out)
}

// A command is counted before its reply goes out: whoever reads the
// reply and then the metrics (a script, a scrape) finds it counted.
// Counted after the send, a scrape racing the reply missed it
// (TestMetricsAfterAScriptedConversation failed so under load).
func TestCommandIsCountedBeforeItsReply(t *testing.T) {
	obs := &observed{}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("hi"), nil },
		func(c *Config, d *Deps) { d.Observer = obs })
	ch := &seenAtSend{recorder: newRecorder("seen"), obs: obs}
	env.g.AddChannel(ch)
	for _, text := range []string{"/help", "/nosuch"} {
		m := inbound("s1", text)
		m.Channel = "seen"
		done, err := env.g.Submit(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, done)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if len(ch.seen) != 2 || !slices.Contains(ch.seen[0], "command seen /help") || !slices.Contains(ch.seen[1], "command seen unknown") {
		t.Errorf("counted when each reply went out: %q; want each command counted before its reply", ch.seen)
	}
}
