package channels

import (
	"context"
	"slices"
	"strconv"
	"testing"
)

type listSink struct{ got []string }

func (s *listSink) Deliver(_ context.Context, in Inbound) error {
	s.got = append(s.got, in.Text)
	return nil
}

func textDelivery(s Sink) *Delivery[string] {
	return NewDelivery(DeliveryConfig[string]{
		Sink:   s,
		Accept: func(_ context.Context, m string) (Inbound, bool) { return Inbound{Text: m}, m != "drop" },
		Send:   func(context.Context, Outbound) error { return nil },
	})
}

// A message taken while Run stops with a full queue is kept and handed over
// after the queued ones; one taken after the hand-over is not delivered.
func TestDeliveryKeepsWhatArrivesWhileStopping(t *testing.T) {
	s := &listSink{}
	d := textDelivery(s)
	ctx, cancel := context.WithCancel(t.Context())
	d.Put(ctx, "drop") // filtered by Accept on the way out
	var want []string
	for i := range QueueSize - 1 {
		m := strconv.Itoa(i)
		d.Put(ctx, m)
		want = append(want, m)
	}
	cancel()
	d.Put(ctx, "late") // the queue is full and ctx is done: kept
	want = append(want, "late")
	d.HandOver(ctx)
	d.Put(ctx, "too late")
	if !slices.Equal(s.got, want) {
		t.Errorf("handed over %d messages ending %q, want %d ending %q", len(s.got), s.got[max(0, len(s.got)-2):], len(want), want[len(want)-2:])
	}
	if len(d.queue) != 0 {
		t.Errorf("%d messages left in the queue after the hand-over", len(d.queue))
	}
}

type closedSink struct{}

func (closedSink) Deliver(context.Context, Inbound) error { return ErrClosed }

// ErrClosed stops Run and asks the adapter to stop receiving.
func TestDeliveryStopsWhenTheGatewayCloses(t *testing.T) {
	stopped := make(chan struct{})
	d := NewDelivery(DeliveryConfig[string]{
		Sink:   closedSink{},
		Accept: func(_ context.Context, m string) (Inbound, bool) { return Inbound{Text: m}, true },
		Stop:   func() { close(stopped) },
	})
	d.Put(t.Context(), "bye")
	d.Run(t.Context()) // returns: the sink is closed
	select {
	case <-stopped:
	default:
		t.Fatal("Stop was not called")
	}
}
