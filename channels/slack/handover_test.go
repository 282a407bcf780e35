package slack

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// Messages acked but not yet delivered when Run stops are handed to the
// sink after all (Slack will not send them again), in order, with a live
// context: the one being delivered when the stop came, and the queued ones.
func TestAckedMessagesHandedOverAtStop(t *testing.T) {
	entered := make(chan struct{})
	var blocked atomic.Bool
	h := startHarness(t, harnessOpts{sink: func(s *recSink, _ *Adapter) {
		s.respondCtx = func(ctx context.Context, in channels.Inbound) error {
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
		}
	}})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "first"})
	select {
	case <-entered:
	case <-h.ctx().Done():
		t.Fatal("the first message never reached the sink")
	}
	var envelopes []string
	for _, text := range []string{"second", "third", "fourth"} {
		envelopes = append(envelopes, h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: text}).EnvelopeID)
	}
	// Acked means Slack will never send them again.
	if err := h.fake.WaitAcked(h.ctx(), envelopes...); err != nil {
		t.Fatal(err)
	}
	h.cancel()
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	var got []string
	for _, in := range h.sink.all() {
		got = append(got, in.Text)
	}
	if want := []string{"first", "second", "third", "fourth"}; !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}
