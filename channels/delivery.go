package channels

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// BusyNotice is what a chat adapter answers, as a KindError reply, to a
// message the gateway refused with ErrBusy.
const BusyNotice = "I'm still working on earlier messages here; please try again in a moment."

// NotAllowedNotice is what a chat adapter answers, once per user and as a
// KindError reply, to a direct message from someone not in its allowFrom.
const NotAllowedNotice = "You're not on this bot's allow list."

// QueueSize bounds the messages an adapter has taken from its platform
// (acked, read) but not yet delivered. A full queue holds the platform
// reader up; nothing is dropped.
const QueueSize = 256

// HandOverTimeout bounds the hand-over, after Run stops, of the messages
// taken but not yet delivered.
const HandOverTimeout = 5 * time.Second

// DeliveryConfig wires a Delivery to its adapter.
type DeliveryConfig[M any] struct {
	Sink Sink
	// Accept turns a queued message into the Inbound to deliver (filters,
	// lookups); false drops it. It runs on the delivery goroutine, in queue
	// order, and during the hand-over with its context.
	Accept func(ctx context.Context, m M) (Inbound, bool)
	// Send posts the adapter's own notices (Notify, the busy notice).
	Send func(ctx context.Context, out Outbound) error
	// Stop is called when the sink answers ErrClosed: the gateway is going
	// away, and the adapter should stop receiving.
	Stop func()
	// Done, when set, is called once the Delivery is finished with a queued
	// message, whatever became of it (delivered, refused as busy, dropped
	// by Accept, failed): a platform may be told then that the message
	// was taken (Slack's ack), so that a process killed before the gateway
	// had it leaves the message to be sent again. A message still held
	// when Run stops is finished by HandOver.
	Done func(m M)
	Log  *slog.Logger
}

// Delivery carries the messages a chat adapter took from its platform to
// the gateway: a bounded queue, one goroutine that delivers in order, the
// busy notice, and the hand-over at stop — a platform does not send again
// what the adapter acked or read, so what is still waiting when Run stops
// is delivered after all (a gateway that is shutting down saves it and
// tells its sender) instead of being dropped in silence.
//
// M is what the platform reader queues: a raw platform message that Accept
// filters, or an Inbound. One Delivery serves one Run of the adapter: the
// reader calls Put, one goroutine runs Run, and once both have stopped the
// adapter calls HandOver.
type Delivery[M any] struct {
	cfg     DeliveryConfig[M]
	queue   chan M
	notices sync.WaitGroup

	mu    sync.Mutex
	held  *Inbound // being delivered when Run's ctx ended
	heldM M        // the queued message held came from
	late  []M      // taken while stopping with a full queue
	over  bool     // handed over: nothing more is delivered
}

// NewDelivery returns a Delivery with an empty queue of QueueSize.
func NewDelivery[M any](cfg DeliveryConfig[M]) *Delivery[M] {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Delivery[M]{cfg: cfg, queue: make(chan M, QueueSize)}
}

// Put queues m, waiting while the queue is full. When ctx ends first, m is
// kept for HandOver; after HandOver it can no longer be delivered, and is
// logged as lost.
func (d *Delivery[M]) Put(ctx context.Context, m M) {
	if d.tryPut(m) {
		return
	}
	if ctx.Err() == nil {
		select {
		case d.queue <- m:
			return
		case <-ctx.Done():
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.over {
		d.cfg.Log.Warn("message taken after the hand-over; not delivered")
		return
	}
	d.late = append(d.late, m)
}

// tryPut queues m if there is room and the hand-over has not begun.
func (d *Delivery[M]) tryPut(m M) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.over {
		return false
	}
	select {
	case d.queue <- m:
		return true
	default:
		return false
	}
}

// Run delivers queued messages one at a time, so the gateway sees them in
// the order the platform sent them, until ctx ends or the sink answers
// ErrClosed.
func (d *Delivery[M]) Run(ctx context.Context) {
	for {
		var m M
		select {
		case <-ctx.Done():
			return
		case m = <-d.queue:
		}
		in, ok := d.cfg.Accept(ctx, m)
		if !ok {
			d.done(m)
			continue
		}
		err := d.cfg.Sink.Deliver(ctx, in)
		held := err != nil && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrClosed) && ctx.Err() != nil
		if !held {
			d.done(m)
		}
		switch {
		case err == nil:
			d.cfg.Log.Debug("delivered", "session", in.SessionKey, "message", in.MessageID, "len", len(in.Text))
		case errors.Is(err, ErrBusy):
			d.cfg.Log.Info("message refused: conversation busy; telling the sender", "session", in.SessionKey, "message", in.MessageID)
			d.Notify(ctx, ReplyTo(in, KindError, BusyNotice))
		case errors.Is(err, ErrClosed):
			d.cfg.Log.Info("gateway closed; no longer receiving", "message", in.MessageID)
			if d.cfg.Stop != nil {
				d.cfg.Stop()
			}
			return
		case held:
			d.mu.Lock()
			d.held, d.heldM = &in, m
			d.mu.Unlock()
			return
		default:
			d.cfg.Log.Error("message not delivered to the gateway", "session", in.SessionKey, "message", in.MessageID, "err", err)
		}
	}
}

func (d *Delivery[M]) done(m M) {
	if d.cfg.Done != nil {
		d.cfg.Done(m)
	}
}

// Notify sends a notice of the adapter's own (busy, not allowed) without
// holding up the messages behind it; HandOver waits for it.
func (d *Delivery[M]) Notify(ctx context.Context, out Outbound) {
	d.notices.Go(func() {
		if err := d.cfg.Send(ctx, out); err != nil && ctx.Err() == nil {
			d.cfg.Log.Warn("notice not sent", "session", out.SessionKey, "chat", out.ChatID, "err", err)
		}
	})
}

// HandOver delivers, once the platform reader and Run have stopped, what
// was taken but not yet delivered: the message Run was delivering when its
// context ended, the queue, and what Put kept while stopping, in that
// order. ctx is Run's, already done; the hand-over has its own deadline of
// HandOverTimeout. It returns once the notices sent meanwhile are out.
func (d *Delivery[M]) HandOver(ctx context.Context) {
	defer d.notices.Wait()
	d.mu.Lock()
	d.over = true
	held, heldM, late := d.held, d.heldM, d.late
	var zero M
	d.held, d.heldM, d.late = nil, zero, nil
	d.mu.Unlock()
	if held == nil && len(d.queue) == 0 && len(late) == 0 {
		return
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HandOverTimeout)
	defer cancel()
	defer d.notices.Wait() // notices sent with hctx go out before it is cancelled
	count, lost := 0, 0
	deliver := func(in Inbound) {
		count++
		err := d.cfg.Sink.Deliver(hctx, in)
		switch {
		case err == nil:
		case errors.Is(err, ErrBusy):
			d.Notify(hctx, ReplyTo(in, KindError, BusyNotice))
		default:
			lost++
			d.cfg.Log.Error("message taken but not delivered", "session", in.SessionKey, "message", in.MessageID, "err", err)
		}
	}
	accept := func(m M) {
		if in, ok := d.cfg.Accept(hctx, m); ok {
			deliver(in)
		}
		d.done(m)
	}
	if held != nil {
		deliver(*held)
		d.done(heldM)
	}
	for len(d.queue) > 0 {
		accept(<-d.queue)
	}
	for _, m := range late {
		accept(m)
	}
	d.cfg.Log.Info("handed over the messages taken before the stop", "count", count, "lost", lost)
}
