package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
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
	times  [][2]time.Duration
}

func (o *observed) TurnDone(channel, outcome string, model, gw time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "turn "+channel+" "+outcome)
	o.times = append(o.times, [2]time.Duration{model, gw})
}

func (o *observed) CommandDone(channel, command string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "command "+channel+" "+command)
}

func (o *observed) Busy(channel string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "busy "+channel)
}

func (o *observed) snapshot() ([]string, [][2]time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events), slices.Clone(o.times)
}

func TestObserverSeesTurnsCommandsAndBusy(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	obs := &observed{}
	started := make(chan struct{}, 1)
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		switch req.Messages[len(req.Messages)-1].Content {
		case "block":
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
	wait(t, submit("/stop"))
	wait(t, blocked)
	wait(t, queued)
	if n := env.g.QueueDepth(); n != 0 {
		t.Errorf("QueueDepth after the queue drained = %d, want 0", n)
	}

	events, times := obs.snapshot()
	want := []string{
		"turn timed ok", "turn timed model-error", "command timed /help", "command timed unknown",
		"busy timed", "command timed /stop", "turn timed stopped", "turn timed ok",
	}
	if !slices.Equal(events, want) {
		t.Fatalf("events:\n%q\nwant\n%q", events, want)
	}
	// The clock moved 3s in each answered model call and 2s in each send.
	wantTimes := [][2]time.Duration{
		{3 * time.Second, 2 * time.Second}, // the reply
		{0, 2 * time.Second},               // the error sentence
		{0, 2 * time.Second},               // "Stopped."
		{3 * time.Second, 2 * time.Second},
	}
	if !slices.Equal(times, wantTimes) {
		t.Errorf("model/gateway times = %v, want %v", times, wantTimes)
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
