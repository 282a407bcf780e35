package discord

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// Messages read from the gateway but not yet delivered when Run stops are
// handed to the sink after all (Discord will not send them again), in
// order, with a live context: the one being delivered when the stop came,
// and the queued ones.
func TestReadMessagesHandedOverAtStop(t *testing.T) {
	h := newHarness(t, harnessOpts{noStart: true})
	queued := make(chan string, 16)
	h.a.onQueued = func(id string) { queued <- id }
	entered := make(chan struct{})
	var blocked atomic.Bool
	h.sink.answerCtx = func(ctx context.Context, in channels.Inbound) error {
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
	h.start()
	if err := h.fake.WaitSessions(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}

	want := []string{h.inject(fakediscord.Message{ChannelID: "D1", Content: "first"})}
	ctx := h.ctx()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the first message never reached the sink")
	}
	nextQueued := func() {
		t.Helper()
		select {
		case <-queued:
		case <-ctx.Done():
			t.Fatal("a message was not read from the gateway")
		}
	}
	nextQueued() // first
	for _, text := range []string{"second", "third", "fourth"} {
		want = append(want, h.inject(fakediscord.Message{ChannelID: "D1", Content: text}))
	}
	for range 3 {
		nextQueued()
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	var got []string
	for len(h.sink.ch) > 0 {
		got = append(got, (<-h.sink.ch).MessageID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}
