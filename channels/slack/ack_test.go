package slack

import (
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// A message's envelope is acked only once the gateway has taken it: until
// then a killed process leaves it unacked, and Slack sends it again to the
// next one. A filtered-out message (here the bot's own) is acked at once.
func TestAckWaitsForTheGateway(t *testing.T) {
	release := make(chan struct{})
	h := startHarness(t, harnessOpts{
		adapter: func(a *Adapter) { a.ackDeadline = time.Minute },
		sink: func(s *recSink, _ *Adapter) {
			s.respond = func(in channels.Inbound) error {
				if in.Text == "hold" {
					<-release
				}
				return nil
			}
		},
	})
	own := h.inject(fakeslack.Event{Channel: "D1", ChannelType: "im", User: "UBOT", BotID: "BBOT", Text: "mine"})
	if err := h.fake.WaitAcked(h.ctx(), own.EnvelopeID); err != nil {
		t.Fatalf("a filtered message was not acked: %v", err)
	}
	held := h.inject(fakeslack.Event{Channel: "D1", ChannelType: "im", User: "U1", Text: "hold"})
	time.Sleep(300 * time.Millisecond)
	if h.fake.Acked(held.EnvelopeID) {
		t.Fatal("acked before the gateway took the message")
	}
	close(release)
	if err := h.fake.WaitAcked(h.ctx(), held.EnvelopeID); err != nil {
		t.Fatalf("not acked once the gateway took it: %v", err)
	}
	if in := h.sink.next(t); in.Text != "hold" {
		t.Fatalf("delivered %q", in.Text)
	}
}

// A gateway slower than Slack's patience does not get the envelope sent
// again: its ack goes out by itself after ackDeadline.
func TestAckGoesOutByItselfAfterTheDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := startHarness(t, harnessOpts{
		adapter: func(a *Adapter) { a.ackDeadline = 200 * time.Millisecond },
		sink: func(s *recSink, _ *Adapter) {
			s.respond = func(channels.Inbound) error { <-release; return nil }
		},
	})
	held := h.inject(fakeslack.Event{Channel: "D1", ChannelType: "im", User: "U1", Text: "slow"})
	if err := h.fake.WaitAcked(h.ctx(), held.EnvelopeID); err != nil {
		t.Fatalf("not acked after the deadline: %v", err)
	}
}

// With several gateways on one store (AckWhenRecorded), a slow gateway's
// envelope is not acked at the deadline: Slack sends it again, to another
// connection whose process answers it, and the envelope is acked once the
// gateway recorded the message. Acked at the deadline, a message a
// process was killed before recording was lost for good.
func TestAckWhenRecordedWaitsPastTheDeadline(t *testing.T) {
	release := make(chan struct{})
	h := startHarness(t, harnessOpts{
		cfg:     func(c *Config) { c.AckWhenRecorded = true },
		fake:    fakeslack.Config{RetryUnacked: 100 * time.Millisecond},
		adapter: func(a *Adapter) { a.ackDeadline = 10 * time.Millisecond },
		sink: func(s *recSink, _ *Adapter) {
			s.respond = func(channels.Inbound) error { <-release; return nil }
		},
	})
	held := h.inject(fakeslack.Event{Channel: "D1", ChannelType: "im", User: "U1", Text: "slow"})
	resent := func() bool {
		for _, d := range h.fake.Deliveries() {
			if d.EventID == held.EventID && d.Attempt > 0 {
				return true
			}
		}
		return false
	}
	ctx := h.ctx()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !resent() {
		select {
		case <-ctx.Done():
			close(release)
			t.Fatal("Slack never sent the envelope again: it was acked before the gateway recorded it")
		case <-tick.C:
		}
	}
	if h.fake.Acked(held.EnvelopeID) {
		t.Fatal("acked before the gateway recorded the message")
	}
	close(release)
	if err := h.fake.WaitAcked(h.ctx(), held.EnvelopeID); err != nil {
		t.Fatalf("not acked once the gateway recorded it: %v", err)
	}
}
