package discord

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// testTuning keeps the adapter's waits short; the protocol is unchanged.
var testTuning = tuning{
	backoffBase:         10 * time.Millisecond,
	backoffMax:          50 * time.Millisecond,
	healthyAfter:        time.Hour,
	openTimeout:         5 * time.Second,
	sendBackoff:         10 * time.Millisecond,
	typingEvery:         20 * time.Millisecond,
	typingTimeout:       5 * time.Second,
	downloadTimeout:     5 * time.Second,
	streamEvery:         20 * time.Millisecond,
	streamCallTimeout:   5 * time.Second,
	autocompleteTimeout: 2 * time.Second,
}

// waitTimeout bounds every wait of a test; nothing should come near it.
const waitTimeout = 15 * time.Second

// recSink records deliveries; answer, when set, decides what Deliver
// returns for each message.
type recSink struct {
	ch     chan channels.Inbound
	mu     sync.Mutex
	answer func(channels.Inbound) error
	// answerCtx, when set, is called before answer with Deliver's context.
	answerCtx func(context.Context, channels.Inbound) error
}

func newRecSink() *recSink { return &recSink{ch: make(chan channels.Inbound, 1024)} }

func (s *recSink) Deliver(ctx context.Context, in channels.Inbound) error {
	s.mu.Lock()
	answer, answerCtx := s.answer, s.answerCtx
	s.mu.Unlock()
	if answerCtx != nil {
		if err := answerCtx(ctx, in); err != nil {
			return err
		}
	}
	if answer != nil {
		if err := answer(in); err != nil {
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

func (s *recSink) setAnswer(f func(channels.Inbound) error) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

// harness is an adapter running against a fake Discord with a guild G1
// (text channels C1 and C2, thread T1 under C1) and a DM channel D1.
type harness struct {
	t      *testing.T
	fake   *fakediscord.Server
	a      *Adapter
	sink   *recSink
	health chan channels.Health
	cancel context.CancelFunc
	done   chan error
}

type harnessOpts struct {
	cfg  Config
	fake fakediscord.Config
	// server, when set, is the fake to run against (a restart, on the
	// same Discord); fake is then unused.
	server  *fakediscord.Server
	noStart bool // build only; the test calls h.start
	noWait  bool // do not wait for the first session
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	fake := o.server
	if fake == nil {
		if o.fake.HeartbeatInterval == 0 {
			o.fake.HeartbeatInterval = 500 * time.Millisecond
		}
		var err error
		if fake, err = fakediscord.Start(o.fake); err != nil {
			t.Fatalf("start fake: %v", err)
		}
		t.Cleanup(fake.Close)
		fake.AddGuild("G1",
			fakediscord.Channel{ID: "C1", Name: "general", Type: fakediscord.ChannelText},
			fakediscord.Channel{ID: "C2", Name: "random", Type: fakediscord.ChannelText},
			fakediscord.Channel{ID: "T1", Name: "a thread", ParentID: "C1", Type: fakediscord.ChannelPublicThread},
		)
		fake.AddChannel(fakediscord.Channel{ID: "D1", Type: fakediscord.ChannelDM})
		fake.AddChannel(fakediscord.Channel{ID: "D2", Type: fakediscord.ChannelDM})
	}

	cfg := o.cfg
	if cfg.Token == "" {
		cfg.Token = fake.Token()
	}
	cfg.APIURL = fake.URL()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.tune = testTuning
	h := &harness{t: t, fake: fake, a: a, sink: newRecSink(), health: make(chan channels.Health, 64)}
	a.health.Watch(func(hl channels.Health) {
		select {
		case h.health <- hl:
		default:
		}
	})
	if !o.noStart {
		h.start()
		if !o.noWait {
			if err := fake.WaitSessions(h.ctx(), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// start runs the adapter until the test ends.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.a.Run(ctx, h.sink) }()
	h.t.Cleanup(func() {
		if err := h.stop(); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	})
}

// stop cancels Run and returns its result; safe to call twice.
func (h *harness) stop() error {
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok {
			close(h.done)
		}
		return err
	case <-time.After(waitTimeout):
		return errors.New("Run did not return after cancel")
	}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), waitTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) inject(m fakediscord.Message) string {
	h.t.Helper()
	if m.Author.ID == "" {
		m.Author = fakediscord.User{ID: "U1", Username: "alice"}
	}
	id, err := h.fake.InjectMessage(m)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

// next returns the next delivered message.
func (h *harness) next() channels.Inbound {
	h.t.Helper()
	select {
	case in := <-h.sink.ch:
		return in
	case <-h.ctx().Done():
		h.t.Fatal("no message delivered in time")
		return channels.Inbound{}
	}
}

// expectNext checks that the next delivered message is the one with id:
// everything injected before it was filtered out (delivery is in order).
func (h *harness) expectNext(id string) channels.Inbound {
	h.t.Helper()
	in := h.next()
	if in.MessageID != id {
		h.t.Fatalf("delivered message %s (%q), want %s", in.MessageID, in.Text, id)
	}
	return in
}

// expectState waits for the adapter to report state.
func (h *harness) expectState(state string) channels.Health {
	h.t.Helper()
	return h.expectHealth(state, "")
}

// expectHealth waits for the adapter to report state with detail (any
// detail when detail is "").
func (h *harness) expectHealth(state, detail string) channels.Health {
	h.t.Helper()
	ctx := h.ctx()
	for {
		select {
		case hl := <-h.health:
			if hl.State == state && (detail == "" || hl.Detail == detail) {
				return hl
			}
		case <-ctx.Done():
			h.t.Fatalf("health never became %q (now %+v)", state, h.a.Health())
			return channels.Health{}
		}
	}
}

func (h *harness) send(out channels.Outbound) {
	h.t.Helper()
	if err := h.a.Send(h.ctx(), out); err != nil {
		h.t.Fatalf("Send: %v", err)
	}
}
