// Package channeltest is the contract every channel adapter is tested
// against: each adapter's tests call Run with a constructor for the adapter
// wired to its fake platform (fakeslack, fakediscord, a pipe for the
// terminal), and the same subtests check what every channel must do,
// whatever its platform: delivery in order, the busy notice, stopping when
// the gateway closes, and the hand-over at stop of what was taken from the
// platform but not yet delivered.
//
// It imports only channels of ours; it is imported by tests only.
package channeltest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// waitTimeout bounds every wait; the subtests normally finish in
// milliseconds (a Discord stop takes a second).
const waitTimeout = 15 * time.Second

// Rig is one adapter wired to its fake platform, not yet running: the
// subtests run it.
type Rig struct {
	Channel channels.Channel
	// Ready waits until the running Channel can take messages (connected
	// to the fake).
	Ready func(ctx context.Context) error
	// Post makes a person send text in one conversation, the same on every
	// call, and returns once the adapter has taken the message from the
	// platform (acked it, read it): the platform will not send it again.
	Post func(ctx context.Context, text string) error
	// Sent waits until the adapter has sent at least n messages to the
	// platform and returns the texts of all of them. Nil for a channel
	// without a platform queue (the terminal): the subtests about the busy
	// notice, a closed gateway and the hand-over are skipped for it.
	Sent func(ctx context.Context, n int) ([]string, error)
}

// Run runs the contract's subtests, each with a fresh Rig from newRig.
func Run(t *testing.T, newRig func(t *testing.T) Rig) {
	t.Run("DeliversInOrder", func(t *testing.T) { deliversInOrder(t, newRig(t)) })
	t.Run("BusyGetsTheNotice", func(t *testing.T) { busyGetsTheNotice(t, newRig(t)) })
	t.Run("ClosedGatewayStopsRun", func(t *testing.T) { closedGatewayStopsRun(t, newRig(t)) })
	t.Run("HandsOverAtStop", func(t *testing.T) { handsOverAtStop(t, newRig(t)) })
}

// sink records deliveries; answer, when set, decides Deliver's error
// first.
type sink struct {
	ch     chan channels.Inbound
	answer func(context.Context, channels.Inbound) error
}

func (s *sink) Deliver(ctx context.Context, in channels.Inbound) error {
	if s.answer != nil {
		if err := s.answer(ctx, in); err != nil {
			return err
		}
	}
	select {
	case s.ch <- in:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next waits for the next delivery.
func (s *sink) next(t *testing.T) channels.Inbound {
	t.Helper()
	select {
	case in := <-s.ch:
		return in
	case <-waitCtx(t).Done():
		t.Fatal("no message delivered in time")
		return channels.Inbound{}
	}
}

// running is a Rig whose Channel runs.
type running struct {
	Rig
	t      *testing.T
	sink   *sink
	cancel context.CancelFunc
	done   chan error

	once sync.Once
	err  error
}

// start runs rig.Channel with a sink that consults answer, and waits
// until it is ready. The test's cleanup stops it.
func start(t *testing.T, rig Rig, answer func(context.Context, channels.Inbound) error) *running {
	t.Helper()
	r := &running{Rig: rig, t: t, sink: &sink{ch: make(chan channels.Inbound, 64), answer: answer}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- rig.Channel.Run(ctx, r.sink) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	if rig.Ready != nil {
		if err := rig.Ready(waitCtx(t)); err != nil {
			t.Fatalf("not ready: %v", err)
		}
	}
	return r
}

// stop cancels Run and returns its result; safe to call more than once.
func (r *running) stop() error {
	r.cancel()
	return r.result()
}

// result waits for Run to return by itself.
func (r *running) result() error {
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(waitTimeout):
			r.err = errors.New("Run did not return")
		}
	})
	return r.err
}

func (r *running) post(text string) {
	r.t.Helper()
	if err := r.Post(waitCtx(r.t), text); err != nil {
		r.t.Fatalf("post %q: %v", text, err)
	}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Messages of one conversation reach the gateway in the order they were
// sent, named by the adapter, keyed to one session and with a valid
// audience of the adapter's platform.
func deliversInOrder(t *testing.T, rig Rig) {
	r := start(t, rig, nil)
	texts := []string{"one", "two", "three"}
	for _, text := range texts {
		r.post(text)
	}
	var got []string
	var key string
	for range texts {
		in := r.sink.next(t)
		got = append(got, in.Text)
		if in.Channel != rig.Channel.Name() {
			t.Errorf("Inbound.Channel = %q, want %q", in.Channel, rig.Channel.Name())
		}
		if !strings.HasPrefix(in.SessionKey, rig.Channel.Name()+":") {
			t.Errorf("SessionKey = %q, want it to start with %q", in.SessionKey, rig.Channel.Name()+":")
		}
		if key != "" && in.SessionKey != key {
			t.Errorf("SessionKey = %q after %q: one conversation, one session", in.SessionKey, key)
		}
		key = in.SessionKey
		if err := in.Audience.Validate(); err != nil {
			t.Errorf("Inbound.Audience %q: %v", in.Audience, err)
		} else if in.Audience.Platform != rig.Channel.Name() {
			t.Errorf("Inbound.Audience %q is not of platform %q", in.Audience, rig.Channel.Name())
		}
	}
	if !slices.Equal(got, texts) {
		t.Errorf("delivered %q, want %q", got, texts)
	}
}

// A message the gateway refuses as busy gets the one busy notice, and the
// adapter keeps delivering.
func busyGetsTheNotice(t *testing.T, rig Rig) {
	if rig.Sent == nil {
		t.Skip("no platform queue: the channel shows the refusal itself")
	}
	r := start(t, rig, func(_ context.Context, in channels.Inbound) error {
		if in.Text == "busy" {
			return channels.ErrBusy
		}
		return nil
	})
	r.post("busy")
	sent, err := rig.Sent(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0] != channels.BusyNotice {
		t.Errorf("sent %q, want one busy notice %q", sent, channels.BusyNotice)
	}
	r.post("after")
	if in := r.sink.next(t); in.Text != "after" {
		t.Errorf("delivered %q, want %q", in.Text, "after")
	}
}

// A gateway that answers ErrClosed is shutting down: Run stops receiving
// and returns nil without being cancelled.
func closedGatewayStopsRun(t *testing.T, rig Rig) {
	if rig.Sent == nil {
		t.Skip("no platform queue: the person at the terminal sees the refusal")
	}
	r := start(t, rig, func(context.Context, channels.Inbound) error { return channels.ErrClosed })
	r.post("bye")
	if err := r.result(); err != nil {
		t.Fatalf("Run = %v, want nil once the gateway closed", err)
	}
}

// Messages taken from the platform but not yet delivered when Run stops
// are handed to the sink after all (the platform will not send them
// again), in order, with a live context: the one being delivered when the
// stop came, and the queued ones.
func handsOverAtStop(t *testing.T, rig Rig) {
	if rig.Sent == nil {
		t.Skip("no platform queue: nothing is taken ahead of delivery")
	}
	entered := make(chan struct{})
	var blocked atomic.Bool
	r := start(t, rig, func(ctx context.Context, in channels.Inbound) error {
		if ctx.Err() != nil {
			t.Errorf("%q delivered with a done context", in.Text)
		}
		if in.Text == "first" && blocked.CompareAndSwap(false, true) {
			// A gateway slow to accept: the stop comes meanwhile.
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	r.post("first")
	select {
	case <-entered:
	case <-waitCtx(t).Done():
		t.Fatal("the first message never reached the sink")
	}
	want := []string{"first", "second", "third", "fourth"}
	for _, text := range want[1:] {
		r.post(text)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	var got []string
	for len(r.sink.ch) > 0 {
		got = append(got, (<-r.sink.ch).Text)
	}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}
