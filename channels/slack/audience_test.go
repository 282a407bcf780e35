package slack

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
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

func personIn(team, user string) audience.Audience {
	return audience.Audience{Kind: audience.Person, Platform: Name, Team: team, Person: user}
}

func guestIn(team, user string) audience.Audience {
	return audience.Audience{Kind: audience.Guest, Platform: Name, Team: team, Person: user}
}

// members are the fake workspace's full members; Ana and Bob belong to a
// second workspace of the same Enterprise Grid organisation too.
var members = []fakeslack.Person{
	{ID: "UANA", Name: "Ana", Teams: []string{"T2"}},
	{ID: "UBOB", Name: "Bob", Teams: []string{"T2"}},
}

// Every kind of conversation gets its audience from what Slack says of
// it: the event's channel_type and envelope, conversations.info, the
// workspace the event came from.
func TestAudienceOfEachConversation(t *testing.T) {
	h := startHarness(t, harnessOpts{
		cfg: func(c *Config) { c.GroupPolicy = PolicyOpen; c.Commands = testCommands },
		fake: fakeslack.Config{People: members, Conversations: []fakeslack.Conversation{
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
		{"DM", fakeslack.Event{Channel: "D1", User: "UANA", Text: "hi"}, personIn(team1, "UANA")},
		{"public channel, message event", fakeslack.Event{Channel: "C1", User: "UBOB", Text: "hi"}, teamOf(team1)},
		{"public channel, mention (no channel_type)", fakeslack.Event{Type: "app_mention", Channel: "C1", User: "UBOB", Text: "<@UBOT> hi"}, teamOf(team1)},
		{"private channel", fakeslack.Event{Type: "app_mention", Channel: "G1", User: "UANA", Text: "<@UBOT> hi"}, privateTo(team1, "G1")},
		{"group DM", fakeslack.Event{Channel: "G2", User: "UANA", Text: "hi"}, privateTo(team1, "G2")},
		{"Slack Connect channel", fakeslack.Event{Type: "app_mention", Channel: "C2", User: "UANA", Text: "<@UBOT> hi"}, sharedTo(team1, "C2")},
		{"channel shared across the organisation", fakeslack.Event{Type: "app_mention", Channel: "C3", User: "UANA", Text: "<@UBOT> hi"}, sharedTo(team1, "C3")},
		{"private Connect channel", fakeslack.Event{Channel: "G3", User: "UANA", Text: "hi"}, sharedTo(team1, "G3")},
		{"DM with a person of another organisation", fakeslack.Event{Channel: "D2", User: "UEXT", UserTeam: "TOTHER", Text: "hi"}, guestIn(team1, "UEXT")},
		{"thread in a private channel", fakeslack.Event{Type: "app_mention", Channel: "G1", User: "UANA", Text: "<@UBOT> hi", ThreadTS: "1.000001"},
			privateTo(team1, "G1")},
		{"public channel of a second workspace", fakeslack.Event{Type: "app_mention", Channel: "C9", Team: "T2", User: "UBOB", Text: "<@UBOT> hi"}, teamOf("T2")},
		{"DM in a second workspace", fakeslack.Event{Channel: "D9", Team: "T2", User: "UANA", Text: "hi"}, personIn("T2", "UANA")},
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
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "D1"}, personIn(team1, "UANA")},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UBOB", Channel: "C1"}, teamOf(team1)},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "G1", Team: "T2"}, privateTo("T2", "G1")},
		{fakeslack.SlashCommand{Command: "/dream-log", User: "UANA", Channel: "C2"}, sharedTo(team1, "C2")},
	} {
		if _, _, err := h.fake.InjectSlashCommand(c.cmd); err != nil {
			t.Fatal(err)
		}
		if in := h.sink.next(t); in.Audience != c.want {
			t.Errorf("slash command in %s: audience %q, want %q", c.cmd.Channel, in.Audience, c.want)
		}
	}
}

// People, not payloads: who a person is comes from users.info (their
// team_id, is_restricted, is_ultra_restricted, is_stranger), whatever the
// event or command says. A guest's or an outsider's DM reads their own
// memory alone (Guest), also through a slash command, which carries no
// user_team; a channel a guest is in, or speaks in, is an audience of its
// own; a person Slack cannot describe counts as a guest.
func TestAudienceOfGuestsAndOutsiders(t *testing.T) {
	h := startHarness(t, harnessOpts{
		cfg: func(c *Config) { c.GroupPolicy = PolicyOpen; c.Commands = testCommands },
		fake: fakeslack.Config{
			People: append([]fakeslack.Person{
				{ID: "UGUS", Name: "Gus", Guest: true},
				{ID: "USOL", Name: "Sol", SingleChannelGuest: true},
				{ID: "UEVE", Name: "Eve", Team: "TOTHER"},
				{ID: "USTR", Name: "Str", Stranger: true},
				{ID: "UGONE", Name: "Gone", Guest: true, Deleted: true},
			}, members...),
			Conversations: []fakeslack.Conversation{
				{ID: "C5", Members: []string{"UANA", "UGUS"}},
				{ID: "G5", Private: true, Members: []string{"UANA", "USOL"}},
				{ID: "C6", Members: []string{"UANA", "UBOB", "UGONE"}},
				{ID: "C7"},
			},
		},
	})
	cases := []struct {
		name string
		ev   fakeslack.Event
		want audience.Audience
	}{
		{"a guest's DM", fakeslack.Event{Channel: "D1", User: "UGUS", Text: "hi"}, guestIn(team1, "UGUS")},
		{"a single-channel guest's DM", fakeslack.Event{Channel: "D2", User: "USOL", Text: "hi"}, guestIn(team1, "USOL")},
		{"another organisation's person, by users.info alone", fakeslack.Event{Channel: "D3", User: "UEVE", Text: "hi"}, guestIn(team1, "UEVE")},
		{"a stranger", fakeslack.Event{Channel: "D4", User: "USTR", Text: "hi"}, guestIn(team1, "USTR")},
		{"someone Slack does not know", fakeslack.Event{Channel: "D5", User: "UNOBODY", Text: "hi"}, guestIn(team1, "UNOBODY")},
		{"a public channel with a guest in it", fakeslack.Event{Type: "app_mention", Channel: "C5", User: "UANA", Text: "<@UBOT> hi"}, sharedTo(team1, "C5")},
		{"a private channel with a guest in it", fakeslack.Event{Channel: "G5", User: "UANA", Text: "hi"}, sharedTo(team1, "G5")},
		{"a deactivated guest reads nothing", fakeslack.Event{Type: "app_mention", Channel: "C6", User: "UBOB", Text: "<@UBOT> hi"}, teamOf(team1)},
		{"a guest speaking in a public channel", fakeslack.Event{Channel: "C7", User: "UGUS", Text: "hi"}, sharedTo(team1, "C7")},
	}
	for _, c := range cases {
		h.inject(c.ev)
		if in := h.sink.next(t); in.Audience != c.want {
			t.Errorf("%s: audience %q, want %q", c.name, in.Audience, c.want)
		}
	}
	// Slash commands and their payload's team: the person decides. Eve of
	// another organisation typing /why in her DM reads no team memory.
	for _, c := range []struct {
		cmd  fakeslack.SlashCommand
		want audience.Audience
	}{
		{fakeslack.SlashCommand{Command: "/why", Text: "launch", User: "UEVE", Channel: "D3"}, guestIn(team1, "UEVE")},
		{fakeslack.SlashCommand{Command: "/web-link", User: "UGUS", Channel: "D1"}, guestIn(team1, "UGUS")},
		{fakeslack.SlashCommand{Command: "/why", Text: "launch", User: "UANA", Channel: "C5"}, sharedTo(team1, "C5")},
		{fakeslack.SlashCommand{Command: "/why", Text: "launch", User: "UANA", Channel: "D6"}, personIn(team1, "UANA")},
	} {
		if _, _, err := h.fake.InjectSlashCommand(c.cmd); err != nil {
			t.Fatal(err)
		}
		if in := h.sink.next(t); in.Audience != c.want {
			t.Errorf("%s by %s in %s: audience %q, want %q", c.cmd.Command, c.cmd.User, c.cmd.Channel, in.Audience, c.want)
		}
	}
	// A member made a guest is one once what Slack said of them expires.
	h.fake.SetPerson(fakeslack.Person{ID: "UANA", Name: "Ana", Guest: true})
	h.a.people.cache.Delete("UANA")
	h.inject(fakeslack.Event{Channel: "D6", User: "UANA", Text: "hi"})
	if in := h.sink.next(t); in.Audience != guestIn(team1, "UANA") {
		t.Errorf("Ana made a guest: audience %q", in.Audience)
	}
}

// Slack lets a person type a slash command in a DM with another person;
// the bot is not in that DM (Slack lets no app into one), and the command
// carries the DM's D… id as one in the person's DM with the bot does.
// Slack decides which it is: conversations.info describes to the bot only
// its own DMs, and names their person. A DM between two people is an
// audience of its own (Shared), never the person's, so the gateway gives
// no sign-in link and no one's memory there; so is a DM Slack cannot
// describe, and one it names as another person's.
func TestSlashCommandInADMBetweenTwoPeople(t *testing.T) {
	logs := &lockedBuffer{}
	h := startHarness(t, harnessOpts{
		cfg: func(c *Config) { c.Commands = testCommands },
		fake: fakeslack.Config{People: members, Conversations: []fakeslack.Conversation{
			{ID: "DANABOB", Between: []string{"UANA", "UBOB"}},
			{ID: "DANA", IM: true, Members: []string{"UANA"}},
			{ID: "DBOB", IM: true, Members: []string{"UBOB"}},
			{ID: "DFAIL", IM: true, Members: []string{"UANA"}, Error: "internal_error"},
		}},
		logTo: logs,
	})
	for _, c := range []struct {
		name string
		cmd  fakeslack.SlashCommand
		want audience.Audience
	}{
		{"Ana in her DM with Bob", fakeslack.SlashCommand{Command: "/web-link", User: "UANA", Channel: "DANABOB"}, sharedTo(team1, "DANABOB")},
		{"Bob in the same DM", fakeslack.SlashCommand{Command: "/why", Text: "locker", User: "UBOB", Channel: "DANABOB"}, sharedTo(team1, "DANABOB")},
		{"Ana in her DM with the bot", fakeslack.SlashCommand{Command: "/web-link", User: "UANA", Channel: "DANA"}, personIn(team1, "UANA")},
		{"Ana in a DM Slack names as Bob's", fakeslack.SlashCommand{Command: "/why", Text: "locker", User: "UANA", Channel: "DBOB"}, sharedTo(team1, "DBOB")},
		{"Ana in a DM Slack cannot describe", fakeslack.SlashCommand{Command: "/web-link", User: "UANA", Channel: "DFAIL"}, sharedTo(team1, "DFAIL")},
	} {
		if _, _, err := h.fake.InjectSlashCommand(c.cmd); err != nil {
			t.Fatal(err)
		}
		if in := h.sink.next(t); in.Audience != c.want {
			t.Errorf("%s: audience %q, want %q", c.name, in.Audience, c.want)
		}
	}
	// A DM between two people is no failure to warn about.
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "DANABOB") && strings.Contains(line, "level=WARN") {
			t.Errorf("a slash command in a DM between two people was warned about: %s", line)
		}
	}
	// Messages in the bot's DM need no look-up: Slack sends none from
	// another DM.
	calls := h.fake.CallCount("conversations.info")
	h.inject(fakeslack.Event{Channel: "DANA", User: "UANA", Text: "hi"})
	if in := h.sink.next(t); in.Audience != personIn(team1, "UANA") {
		t.Errorf("a message in Ana's DM with the bot: audience %q", in.Audience)
	}
	if n := h.fake.CallCount("conversations.info"); n != calls {
		t.Errorf("a message in a DM was looked up (%d calls, want %d)", n, calls)
	}
}

// A channel Slack cannot describe is kept apart as a shared one (its own
// memory, none of the team's: another organisation may be in it), with a
// warning; an app without the scopes says so once. So is one whose
// members cannot be listed, and one where the speaker cannot be told from
// a guest.
func TestAudienceWhenSlackCannotSay(t *testing.T) {
	for _, c := range []struct {
		name  string
		fake  fakeslack.Config
		warns string
		count int
	}{
		{"lookup fails", fakeslack.Config{People: members, Conversations: []fakeslack.Conversation{
			{ID: "C1", Error: "channel_not_found"}, {ID: "C2", Error: "internal_error"},
		}}, "slack cannot tell what a channel is", 2},
		{"members cannot be listed", fakeslack.Config{People: members, Conversations: []fakeslack.Conversation{
			{ID: "C1", MembersError: "internal_error"}, {ID: "C2", MembersError: "ratelimited"},
		}}, "slack cannot list a channel's members", 2},
		{"no scope", fakeslack.Config{People: members, NoConversationsScope: true}, "channels:read, groups:read, mpim:read and im:read", 1},
		{"no users:read", fakeslack.Config{People: members, NoUsersScope: true}, "no users:read scope", 1},
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
			calls := h.fake.CallCount("conversations.info")
			h.inject(fakeslack.Event{Channel: "C1", ChannelType: "channel", User: "UBOB", Text: "again"})
			h.sink.next(t)
			if n := h.fake.CallCount("conversations.info"); n != calls {
				t.Errorf("conversations.info called %d times, want %d", n, calls)
			}
		})
	}
}

// Interactions (block actions, shortcuts, modal submissions) are no way
// in: the app declares none (manifest.yaml: interactivity off), and an
// interactive envelope, even from a person of another organisation, is
// acked and answers nothing, so it cannot show anyone memory.
func TestInteractionsAreNoWayIn(t *testing.T) {
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{People: append([]fakeslack.Person{{ID: "UEVE", Name: "Eve", Team: "TOTHER"}}, members...)}})
	for _, payload := range []map[string]any{
		{"type": "shortcut", "callback_id": "why", "trigger_id": "trig-1", "team": map[string]any{"id": team1},
			"user": map[string]any{"id": "UEVE", "team_id": "TOTHER"}},
		{"type": "block_actions", "trigger_id": "trig-2", "team": map[string]any{"id": team1},
			"user": map[string]any{"id": "UEVE", "team_id": "TOTHER"}, "channel": map[string]any{"id": "D1"},
			"actions": []map[string]any{{"action_id": "why", "value": "release train"}}},
	} {
		id, err := h.fake.SendEnvelope("interactive", payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.fake.WaitAcked(h.ctx(), id); err != nil {
			t.Error(err)
		}
	}
	if got := h.sentinel("UANA"); len(got) != 0 {
		t.Errorf("an interaction was delivered: %+v", got)
	}
	if n := len(h.fake.Posts()) + len(h.fake.Responses()) + len(h.fake.Ephemerals()); n != 0 {
		t.Errorf("an interaction was answered %d times", n)
	}
}
