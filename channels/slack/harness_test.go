package slack

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// waitTimeout bounds every wait in these tests; they normally finish in
// milliseconds.
const waitTimeout = 15 * time.Second

// recSink records deliveries; respond, when set, decides Deliver's answer
// and may reply (it runs on the adapter's delivery goroutine, so replies go
// through a goroutine owned by the sink).
type recSink struct {
	mu      sync.Mutex
	got     []channels.Inbound
	ch      chan channels.Inbound
	respond func(channels.Inbound) error
	// respondCtx, when set, is called before respond with Deliver's context.
	respondCtx func(context.Context, channels.Inbound) error
	reply      func(channels.Inbound) // called in a goroutine the sink waits for
	wg         sync.WaitGroup
}

func newRecSink() *recSink { return &recSink{ch: make(chan channels.Inbound, 1024)} }

func (s *recSink) Deliver(ctx context.Context, in channels.Inbound) error {
	if s.respondCtx != nil {
		if err := s.respondCtx(ctx, in); err != nil {
			return err
		}
	}
	if s.respond != nil {
		if err := s.respond(in); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.got = append(s.got, in)
	s.mu.Unlock()
	if s.reply != nil {
		s.wg.Go(func() { s.reply(in) })
	}
	s.ch <- in
	return nil
}

func (s *recSink) all() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Inbound(nil), s.got...)
}

// next waits for the next delivery.
func (s *recSink) next(t *testing.T) channels.Inbound {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	select {
	case in := <-s.ch:
		return in
	case <-ctx.Done():
		t.Fatalf("no delivery: %v", ctx.Err())
		return channels.Inbound{}
	}
}

// harness runs an Adapter against a fakeslack server.
type harness struct {
	t      *testing.T
	fake   *fakeslack.Server
	a      *Adapter
	sink   *recSink
	health chan channels.Health
	runErr chan error
	cancel context.CancelFunc

	doneOnce  sync.Once
	err       error
	expectErr bool
}

// result waits for Run to return and gives its error.
func (h *harness) result() error {
	h.doneOnce.Do(func() {
		select {
		case h.err = <-h.runErr:
		case <-time.After(waitTimeout):
			h.err = errors.New("Run did not return")
		}
	})
	return h.err
}

type harnessOpts struct {
	cfg  func(*Config)
	fake fakeslack.Config
	// server, when set, is the fake to run against (another process, or
	// a restart, on the same Slack); fake is then unused.
	server   *fakeslack.Server
	adapter  func(*Adapter)
	sink     func(*recSink, *Adapter)
	noWait   bool // do not wait for the first connection
	logLevel slog.Level
	logTo    io.Writer // default: t.Log
}

func startHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	fake := o.server
	if fake == nil {
		fake = fakeslack.New(o.fake)
		t.Cleanup(fake.Close)
	}
	cfg := Config{
		BotToken: fake.BotToken(), AppToken: fake.AppToken(), APIURL: fake.APIURL(),
		ReplyInThread: true,
	}
	var logw io.Writer = testWriter{t}
	if o.logTo != nil {
		logw = o.logTo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: o.logLevel}))
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Fast reconnects and send retries keep the suite quick; the production
	// values are covered by TestConnGateSequence.
	a.reconnectMin, a.reconnectMax = 20*time.Millisecond, 200*time.Millisecond
	a.sendRetry.Base = 20 * time.Millisecond
	h := &harness{t: t, fake: fake, a: a, sink: newRecSink(), health: make(chan channels.Health, 256), runErr: make(chan error, 1)}
	a.health.Watch(func(hl channels.Health) {
		select {
		case h.health <- hl:
		default:
		}
	})
	if o.adapter != nil {
		o.adapter(a)
	}
	if o.sink != nil {
		o.sink(h.sink, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runErr <- a.Run(ctx, h.sink) }()
	t.Cleanup(func() {
		cancel()
		if err := h.result(); err != nil && !h.expectErr {
			t.Errorf("Run returned %v after cancel", err)
		}
		h.sink.wg.Wait()
	})
	if !o.noWait {
		if err := fake.WaitConnections(h.ctx(), 1); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), waitTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

// inject sends ev and fails the test on error.
func (h *harness) inject(ev fakeslack.Event) fakeslack.Delivery {
	h.t.Helper()
	d, err := h.fake.Inject(ev)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// sentinel sends a DM from an allowed user and waits until it is delivered.
// Deliveries keep Slack's order, so everything injected before it has been
// processed; it returns the deliveries that came before the sentinel.
func (h *harness) sentinel(user string) []channels.Inbound {
	h.t.Helper()
	d := h.inject(fakeslack.Event{Channel: "D_SENTINEL", ChannelType: "im", User: user, Text: "sentinel"})
	var before []channels.Inbound
	for {
		in := h.sink.next(h.t)
		if in.MessageID == d.Event.TS {
			return before
		}
		before = append(before, in)
	}
}

// waitHealth waits for the given state on the health feed.
func (h *harness) waitHealth(state string) channels.Health {
	h.t.Helper()
	ctx := h.ctx()
	for {
		select {
		case hl := <-h.health:
			if hl.State == state {
				return hl
			}
		case <-ctx.Done():
			h.t.Fatalf("health never became %q (now %+v)", state, h.a.Health())
		}
	}
}

// echoReplies makes the sink answer every message with "re: <text>".
func echoReplies(t *testing.T) func(*recSink, *Adapter) {
	return func(s *recSink, a *Adapter) {
		s.reply = func(in channels.Inbound) {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "re: "+in.Text)); err != nil {
				t.Errorf("reply to %s: %v", in.SessionKey, err)
			}
		}
	}
}

// testWriter sends logs to t.Log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
