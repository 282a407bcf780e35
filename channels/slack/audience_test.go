package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

const team1 = fakeslack.DefaultTeamID

func teamOf(team string) audience.Audience {
	return audience.Audience{Kind: audience.Team, Platform: Name, Team: team}
}

func sharedTo(team, chat string) audience.Audience {
	return audience.Audience{Kind: audience.Shared, Platform: Name, Team: team, Chat: chat}
}

func privateTo(team, chat string) audience.Audience {
	return audience.Audience{Kind: audience.Private, Platform: Name, Team: team, Chat: chat}
}

// Every kind of conversation gets its audience from what Slack says of
// it: the event's channel_type and envelope, conversations.info, the
// workspace the event came from.
func TestAudienceOfEachConversation(t *testing.T) {
	h := startHarness(t, harnessOpts{
		cfg: func(c *Config) { c.GroupPolicy = PolicyOpen; c.Commands = testCommands },
		fake: fakeslack.Config{Conversations: []fakeslack.Conversation{
			{ID: "C1"},
			{ID: "G1", Private: true},
			{ID: "G2", MPIM: true, Private: true},
			{ID: "C2", ExtShared: true},
			{ID: "C3", OrgShared: true},
			{ID: "G3", Private: true, ExtShared: true},
			{ID: "C9"},
		}},
	})
	cases := []struct {
		name string
		ev   fakeslack.Event
		want audience.Audience
	}{
		{"DM", fakeslack.Event{Channel: "D1", User: "UANA", Text: "hi"},
			audience.Audience{Kind: audience.Person, Platform: Name, Team: team1, Person: "UANA"}},
		{"public channel, message event", fakeslack.Event{Channel: "C1", User: "UBOB", Text: "hi"}, teamOf(team1)},
		{"public channel, mention (no channel_type)", fakeslack.Event{Type: "app_mention", Channel: "C1", User: "UBOB", Text: "<@UBOT> hi"}, teamOf(team1)},
		{"private channel", fakeslack.Event{Type: "app_mention", Channel: "G1", User: "UANA", Text: "<@UBOT> hi"}, privateTo(team1, "G1")},
		{"group DM", fakeslack.Event{Channel: "G2", User: "UANA", Text: "hi"}, privateTo(team1, "G2")},
		{"Slack Connect channel", fakeslack.Event{Type: "app_mention", Channel: "C2", User: "UANA", Text: "<@UBOT> hi"},
			audience.Audience{Kind: audience.Shared, Platform: Name, Team: team1, Chat: "C2"}},
		{"channel shared across the organisation", fakeslack.Event{Type: "app_mention", Channel: "C3", User: "UANA", Text: "<@UBOT> hi"},
			audience.Audience{Kind: audience.Shared, Platform: Name, Team: team1, Chat: "C3"}},
		{"private Connect channel", fakeslack.Event{Channel: "G3", User: "UANA", Text: "hi"},
			audience.Audience{Kind: audience.Shared, Platform: Name, Team: team1, Chat: "G3"}},
		{"DM with a person of another organisation", fakeslack.Event{Channel: "D2", User: "UEXT", UserTeam: "TOTHER", Text: "hi"},
			audience.Audience{Kind: audience.Shared, Platform: Name, Team: team1, Chat: "D2"}},
		{"thread in a private channel", fakeslack.Event{Type: "app_mention", Channel: "G1", User: "UANA", Text: "<@UBOT> hi", ThreadTS: "1.000001"},
			privateTo(team1, "G1")},
		{"public channel of a second workspace", fakeslack.Event{Type: "app_mention", Channel: "C9", Team: "T2", User: "UBOB", Text: "<@UBOT> hi"}, teamOf("T2")},
		{"DM in a second workspace", fakeslack.Event{Channel: "D9", Team: "T2", User: "UANA", Text: "hi"},
			audience.Audience{Kind: audience.Person, Platform: Name, Team: "T2", Person: "UANA"}},
	}
	for _, c := range cases {
		d := h.inject(c.ev)
		in := h.sink.next(t)
		if in.MessageID != d.Event.TS {
			t.Fatalf("%s: delivered %+v, not the message injected", c.name, in)
		}
		if in.Audience != c.want {
			t.Errorf("%s: audience %q, want %q", c.name, in.Audience, c.want)
		}
	}
	if a, b := teamOf(team1).Home(), teamOf("T2").Home(); a == b {
		t.Errorf("two workspaces share the scope %q", a)
	}
	// DMs and Connect channels the envelope names need no lookup; C1 is
	// looked up once for its two messages.
	if n := h.fake.CallCount("conversations.info"); n != 5 {
		t.Errorf("conversations.info called %d times, want 5 (C1, G1, G2, C3, C9)", n)
	}

	// Slash commands carry their workspace and channel: the same rules.
	for _, c := range []struct {
		cmd  fakeslack.SlashCommand
		want audience.Audience
	}{
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "D1"},
			audience.Audience{Kind: audience.Person, Platform: Name, Team: team1, Person: "UANA"}},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UBOB", Channel: "C1"}, teamOf(team1)},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "G1", Team: "T2"}, privateTo("T2", "G1")},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "C2"},
			audience.Audience{Kind: audience.Shared, Platform: Name, Team: team1, Chat: "C2"}},
	} {
		if _, _, err := h.fake.InjectSlashCommand(c.cmd); err != nil {
			t.Fatal(err)
		}
		if in := h.sink.next(t); in.Audience != c.want {
			t.Errorf("slash command in %s: audience %q, want %q", c.cmd.Channel, in.Audience, c.want)
		}
	}
}

// A channel Slack cannot describe is kept apart as a shared one (its own
// memory, none of the team's: another organisation may be in it), with a
// warning; an app without the scopes says so once.
func TestAudienceWhenSlackCannotSay(t *testing.T) {
	for _, c := range []struct {
		name  string
		fake  fakeslack.Config
		warns string
		count int
	}{
		{"lookup fails", fakeslack.Config{Conversations: []fakeslack.Conversation{
			{ID: "C1", Error: "channel_not_found"}, {ID: "C2", Error: "internal_error"},
		}}, "slack cannot tell what a channel is", 2},
		{"no scope", fakeslack.Config{NoConversationsScope: true}, "channels:read, groups:read, mpim:read and im:read", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.GroupPolicy = PolicyOpen }, fake: c.fake, logTo: logs})
			for _, ch := range []string{"C1", "C2"} {
				h.inject(fakeslack.Event{Channel: ch, ChannelType: "channel", User: "UBOB", Text: "hi"})
				if in := h.sink.next(t); in.Audience != sharedTo(team1, ch) {
					t.Errorf("%s: audience %q, want shared, its own", ch, in.Audience)
				}
			}
			if n := strings.Count(logs.String(), c.warns); n != c.count {
				t.Errorf("warned %d times (%q), want %d:\n%s", n, c.warns, c.count, logs.String())
			}
			// The failure is remembered for a while, not asked again per message.
			h.inject(fakeslack.Event{Channel: "C1", ChannelType: "channel", User: "UBOB", Text: "again"})
			h.sink.next(t)
			if n := h.fake.CallCount("conversations.info"); n != 2 {
				t.Errorf("conversations.info called %d times, want 2", n)
			}
		})
	}
}

// What Slack said of a channel is kept convTTL: a channel made private is
// private once that has passed, and one made public again after a failure
// is public once convFailTTL has.
func TestAudienceCacheExpires(t *testing.T) {
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	h := startHarness(t, harnessOpts{
		cfg:     func(c *Config) { c.GroupPolicy = PolicyOpen },
		fake:    fakeslack.Config{Conversations: []fakeslack.Conversation{{ID: "C1"}, {ID: "C2", Error: "internal_error"}}},
		adapter: func(a *Adapter) { a.convs = channels.NewTTLCache[convKind](convCap, clock.Now) },
	})
	say := func(ch string) audience.Audience {
		t.Helper()
		h.inject(fakeslack.Event{Type: "app_mention", Channel: ch, User: "UBOB", Text: "<@UBOT> hi"})
		return h.sink.next(t).Audience
	}
	if a := say("C1"); a != teamOf(team1) {
		t.Fatalf("public channel: %q", a)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C1", Private: true})
	clock.Advance(convTTL - time.Second)
	if a := say("C1"); a != teamOf(team1) {
		t.Errorf("within the TTL: %q, want the cached answer", a)
	}
	clock.Advance(time.Second)
	if a := say("C1"); a != privateTo(team1, "C1") {
		t.Errorf("made private, after the TTL: %q", a)
	}

	if a := say("C2"); a != sharedTo(team1, "C2") {
		t.Errorf("lookup failing: %q", a)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C2"})
	clock.Advance(convFailTTL)
	if a := say("C2"); a != teamOf(team1) {
		t.Errorf("lookup working again: %q", a)
	}
}
