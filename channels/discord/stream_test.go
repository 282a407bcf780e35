package discord

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// A long answer appears as it is written: posted, edited as it grows, a
// second message once it passes 2000 characters, and it ends showing
// exactly the final text, split as Send splits it.
func TestStreamShowsReplyAsWritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{Stream: true}})
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> tell me a long story"})
	in := h.expectNext(id)
	st := h.a.StartStream(in)
	if st == nil {
		t.Fatal("no stream")
	}
	st.Write("Once upon")
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Content != "Once upon" || sent[0].ReplyTo != id {
		t.Fatalf("first post = %+v", sent[0])
	}
	st.Write(" a time")
	edits, err := h.fake.WaitEdits(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if edits[0].MessageID != sent[0].ID || edits[0].Content != "Once upon a time" {
		t.Fatalf("edit = %+v", edits[0])
	}
	long := strings.Repeat("and then it rained. ", 150) // past 2000
	st.Write(long)
	if _, err := h.fake.WaitSent(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	final := "Once upon a time" + long + "The end."
	st.Write("The end.")
	h.send(channels.Outbound{Channel: Name, ChatID: "C1", ReplyTo: id, Text: final, Streamed: true})

	want := channels.SplitMessage(final, MaxMessageLen)
	if got := h.fake.Shown("C1", id); !reflect.DeepEqual(got, want) {
		t.Fatalf("channel shows %d messages %q\nwant %d %q", len(got), got, len(want), want)
	}
	if n := len(h.fake.Sent()); n != len(want) {
		t.Fatalf("%d messages posted, want %d", n, len(want))
	}
}

// Written faster than the throttle, an answer is posted once by Send,
// never edited: no edit per fragment.
func TestStreamThrottlesEdits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{Stream: true}})
	h.a.tune.streamEvery = time.Hour
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> quick one"})
	in := h.expectNext(id)
	st := h.a.StartStream(in)
	for range 200 {
		st.Write("word ")
	}
	final := strings.TrimSpace(strings.Repeat("word ", 200))
	h.send(channels.Outbound{Channel: Name, ChatID: "C1", ReplyTo: id, Text: final, Streamed: true})
	sent := h.fake.Sent()
	if len(sent) != 1 || sent[0].Content != final || len(h.fake.Edits()) != 0 {
		t.Fatalf("sent %d messages, %d edits", len(sent), len(h.fake.Edits()))
	}
}

// A stream that showed text before a tool call is overwritten by the next
// step; a reply shorter than what was shown deletes the surplus message; a
// stream is off unless configured.
func TestStreamBreakAndShrink(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{Stream: true}})
	id := h.inject(fakediscord.Message{ChannelID: "C2", Content: "<@BOT1> look it up"})
	in := h.expectNext(id)
	st := h.a.StartStream(in)
	st.Write(strings.Repeat("thinking out loud. ", 120)) // two parts
	if _, err := h.fake.WaitSent(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	st.Break()
	st.Write("Found it.")
	h.send(channels.Outbound{Channel: Name, ChatID: "C2", ReplyTo: id, Text: "Found it.", Streamed: true})
	if got := h.fake.Shown("C2", id); !reflect.DeepEqual(got, []string{"Found it."}) {
		t.Fatalf("channel shows %q", got)
	}
	if len(h.fake.Deleted()) != 1 {
		t.Fatalf("deleted %v", h.fake.Deleted())
	}

	off := newHarness(t, harnessOpts{})
	if off.a.StartStream(in) != nil {
		t.Fatal("streaming without Config.Stream")
	}
}

// Leaked reasoning is never shown while an answer streams.
func TestStreamHidesReasoning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{Stream: true}})
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> think first"})
	in := h.expectNext(id)
	st := h.a.StartStream(in)
	st.Write("<think>private musing")
	st.Write("</think>")
	st.Write("Public.")
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	h.send(channels.Outbound{Channel: Name, ChatID: "C1", ReplyTo: id, Text: "Public.", Streamed: true})
	for _, m := range sent {
		if strings.Contains(m.Content, "musing") || strings.Contains(m.Content, "think") {
			t.Errorf("reasoning was posted: %q", m.Content)
		}
	}
	if got := h.fake.Shown("C1", id); !reflect.DeepEqual(got, []string{"Public."}) {
		t.Errorf("channel shows %q", got)
	}
}
