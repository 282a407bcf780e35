package discord

import (
	"fmt"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// Stopping the indicator while a typing call is in flight must neither wait
// for it nor spoil the channel's rate-limit bucket: discordgo takes a call
// from the bucket before the request and gives it back only from the answer's
// headers, so cancelled calls used to drain it, and after four the next
// typing call slept until the bucket reset (here an hour) while stop waited
// for it, holding the reply. Each reply must reach the fake while that turn's
// typing call is still held there.
func TestTypingNeverDelaysReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{fake: fakediscord.Config{TypingResetAfter: time.Hour}})
	in := channels.Inbound{Channel: Name, ChatID: "C1", SessionKey: "discord:C1"}

	// One answered call: the bucket now has 4 calls left until it resets.
	stop := h.a.StartTyping(h.ctx(), in)
	if _, err := h.fake.WaitTyping(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	stop()

	h.fake.HoldTyping()
	defer h.fake.ReleaseTyping()
	const turns = 12
	for i := 1; i <= turns; i++ {
		stop := h.a.StartTyping(h.ctx(), in)
		if _, err := h.fake.WaitTyping(h.ctx(), 1+i); err != nil {
			t.Fatalf("turn %d: typing call never reached Discord: %v", i, err)
		}
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-h.ctx().Done():
			t.Fatalf("turn %d: stopping the typing indicator blocked", i)
		}
		h.send(channels.Outbound{ChatID: "C1", Text: fmt.Sprintf("reply %d", i)})
	}
	sent, err := h.fake.WaitSent(h.ctx(), turns)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sent {
		if s.TypingHeld == 0 {
			t.Fatalf("reply %d waited for a typing call to finish", i+1)
		}
	}
}
