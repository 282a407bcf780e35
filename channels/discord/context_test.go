package discord

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

func contextTexts(cs []channels.ContextMessage) []string {
	var out []string
	for _, c := range cs {
		who := c.SenderName
		if c.FromBot {
			who = "bot"
		}
		out = append(out, who+": "+c.Text)
	}
	return out
}

// A reply to a message the bot never saw (no mention) brings that message
// along as context.
func TestReplyCarriesReferencedMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	bob := fakediscord.User{ID: "U2", Username: "bob"}
	orig := h.inject(fakediscord.Message{ChannelID: "C2", Author: bob, Content: "the deploy is on friday"})
	id := h.inject(fakediscord.Message{ChannelID: "C2", Content: "<@BOT1> is that a good idea?", ReplyTo: orig})
	in := h.expectNext(id)
	got := strings.Join(contextTexts(in.Context), "|")
	if got != "bob: the deploy is on friday" {
		t.Fatalf("context = %q", got)
	}
	if in.Context[0].Time.IsZero() {
		t.Fatal("context message has no time")
	}
	// A plain mention carries none.
	id = h.inject(fakediscord.Message{ChannelID: "C2", Content: "<@BOT1> thanks"})
	if in := h.expectNext(id); len(in.Context) != 0 {
		t.Fatalf("context = %v", contextTexts(in.Context))
	}
}

// Addressed in a thread for the first time, the bot reads the thread's
// recent messages (bounded) into the context, oldest first; later messages
// in the same thread carry none.
func TestThreadJoinCarriesRecentMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	bob := fakediscord.User{ID: "U2", Username: "bob"}
	for i := range contextMessages + 5 {
		h.inject(fakediscord.Message{ChannelID: "T1", Author: bob, Content: fmt.Sprintf("note %d", i)})
	}
	id := h.inject(fakediscord.Message{ChannelID: "T1", Content: "<@BOT1> sum this up"})
	in := h.expectNext(id)
	if in.SessionKey != "discord:C1:thread:T1" {
		t.Fatalf("session = %q", in.SessionKey)
	}
	got := contextTexts(in.Context)
	if len(got) != contextMessages {
		t.Fatalf("%d context messages, want %d: %v", len(got), contextMessages, got)
	}
	if got[0] != "bob: note 5" || got[len(got)-1] != fmt.Sprintf("bob: note %d", contextMessages+4) {
		t.Fatalf("context = %v", got)
	}
	id = h.inject(fakediscord.Message{ChannelID: "T1", Content: "<@BOT1> and now?"})
	if in := h.expectNext(id); len(in.Context) != 0 {
		t.Fatalf("second message in the thread carries context %v", contextTexts(in.Context))
	}
}

// The context is bounded by characters too, keeping the newest messages.
func TestThreadContextCharacterBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.fake.CreateThread(fakediscord.Channel{ID: "T9", ParentID: "C2", Name: "long"})
	long := strings.Repeat("y", contextMessageMax+500)
	for range 10 {
		h.inject(fakediscord.Message{ChannelID: "T9", Author: fakediscord.User{ID: "U2", Username: "bob"}, Content: long})
	}
	id := h.inject(fakediscord.Message{ChannelID: "T9", Content: "<@BOT1> tl;dr?"})
	in := h.expectNext(id)
	total := 0
	for _, c := range in.Context {
		total += len(c.Text)
		if n := len([]rune(c.Text)); n > contextMessageMax+1 {
			t.Fatalf("one context message has %d characters", n)
		}
	}
	if total > contextChars || len(in.Context) == 0 {
		t.Fatalf("%d context messages with %d characters, bound %d", len(in.Context), total, contextChars)
	}
}

// A thread started from a message brings that message (in the parent
// channel, with the thread's id) along with the thread's own.
func TestThreadContextIncludesStarterMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	bob := fakediscord.User{ID: "U2", Username: "bob"}
	starter := h.inject(fakediscord.Message{ChannelID: "C2", Author: bob, Content: "why is the build red?"})
	h.fake.CreateThread(fakediscord.Channel{ID: starter, ParentID: "C2", Name: "build"})
	h.inject(fakediscord.Message{ChannelID: starter, Author: bob, Content: "it started this morning"})
	id := h.inject(fakediscord.Message{ChannelID: starter, Content: "<@BOT1> any idea?"})
	in := h.expectNext(id)
	got := strings.Join(contextTexts(in.Context), "|")
	if got != "bob: why is the build red?|bob: it started this morning" {
		t.Fatalf("context = %q", got)
	}
}
