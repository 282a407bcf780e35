package slack

import (
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// announcements is a harness whose clock never moves unless the test moves
// it, so that only Slack's announcements (and the bounds the test steps
// over) can change what the adapter knows of a channel.
func announcements(t *testing.T, fake fakeslack.Config) (*harness, *testkit.Clock) {
	t.Helper()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	fake.People = append(fake.People, members...)
	fake.People = append(fake.People, fakeslack.Person{ID: "UGUS", Name: "Gus", Guest: true})
	h := startHarness(t, harnessOpts{
		cfg:     func(c *Config) { c.Commands = testCommands },
		fake:    fake,
		adapter: func(a *Adapter) { a.now = clock.Now },
	})
	return h, clock
}

// mention asks the bot in channel as Ana, with a mention (which names no
// kind) or a slash command, and returns the audience it is answered as.
func mention(h *harness, channel string) audience.Audience {
	h.t.Helper()
	h.inject(fakeslack.Event{Type: "app_mention", Channel: channel, User: "UANA", Text: "<@UBOT> hi"})
	return h.sink.next(h.t).Audience
}

func slash(h *harness, channel string) audience.Audience {
	h.t.Helper()
	if _, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/why", Text: "launch", User: "UANA", Channel: channel}); err != nil {
		h.t.Fatal(err)
	}
	return h.sink.next(h.t).Audience
}

// Each change Slack announces updates the channel's audience at once, with
// no time passing: made private, made public, shared with another
// organisation and unshared, a guest joining and leaving, a new id. The
// announcements are never turns.
func TestAudienceFollowsSlackAnnouncements(t *testing.T) {
	h, _ := announcements(t, fakeslack.Config{Conversations: []fakeslack.Conversation{{ID: "C1", Members: []string{"UANA", "UBOB"}}}})
	steps := []struct {
		name   string
		change func() ([]fakeslack.Delivery, error)
		ask    func(*harness, string) audience.Audience
		want   audience.Audience
	}{
		{"made private", func() ([]fakeslack.Delivery, error) { return h.fake.ConvertToPrivate("C1", "UBOB") }, mention, privateTo(team1, "C1")},
		{"made public", func() ([]fakeslack.Delivery, error) { return h.fake.ConvertToPublic("C1", "UBOB") }, mention, teamOf(team1)},
		{"shared with another organisation", func() ([]fakeslack.Delivery, error) { return h.fake.ShareChannel("C1", "TPARTNER") }, slash, sharedTo(team1, "C1")},
		{"unshared", func() ([]fakeslack.Delivery, error) { return h.fake.UnshareChannel("C1", "TPARTNER") }, slash, teamOf(team1)},
		{"a guest joins", func() ([]fakeslack.Delivery, error) { return h.fake.Join("C1", "UGUS", "UBOB") }, slash, sharedTo(team1, "C1")},
		{"the guest leaves", func() ([]fakeslack.Delivery, error) { return h.fake.Leave("C1", "UGUS") }, mention, teamOf(team1)},
	}
	if a := mention(h, "C1"); a != teamOf(team1) {
		t.Fatalf("before any change: %q", a)
	}
	for _, s := range steps {
		ds, err := s.change()
		if err != nil || len(ds) != 1 {
			t.Fatalf("%s: %d events sent, %v", s.name, len(ds), err)
		}
		if err := h.fake.WaitAcked(h.ctx(), ds[0].EnvelopeID); err != nil {
			t.Fatal(err)
		}
		if a := s.ask(h, "C1"); a != s.want {
			t.Errorf("%s: audience %q, want %q", s.name, a, s.want)
		}
	}
	// A new id: the channel under it is described afresh.
	if _, err := h.fake.ChangeChannelID("C1", "C1NEW"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.ConvertToPrivate("C1NEW", "UBOB"); err != nil {
		t.Fatal(err)
	}
	if a := mention(h, "C1NEW"); a != privateTo(team1, "C1NEW") {
		t.Errorf("under its new id: %q", a)
	}
	if got := h.sentinel("UANA"); len(got) != 0 {
		t.Errorf("announcements were delivered as turns: %+v", got)
	}
}

// After a reconnection nothing known is trusted: announcements made while
// the app was away are lost.
func TestAudienceForgottenAtReconnect(t *testing.T) {
	h, _ := announcements(t, fakeslack.Config{Conversations: []fakeslack.Conversation{{ID: "C1", Members: []string{"UANA"}}}})
	if a := mention(h, "C1"); a != teamOf(team1) {
		t.Fatalf("public channel: %q", a)
	}
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C1", Private: true}) // while away: no event
	if err := h.fake.WaitConnections(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	if a := mention(h, "C1"); a != privateTo(team1, "C1") {
		t.Errorf("after the reconnection: %q, want the channel looked up again", a)
	}
}

// How old a description may be: a message event whose channel_type
// disagrees forces a lookup; one that agrees is answered from what is
// known for convTTL; a mention, which names no kind, from a description at
// most mentionFresh old; a failed lookup stands convFailTTL, as a shared
// channel's.
func TestAudienceLookupBounds(t *testing.T) {
	h, clock := announcements(t, fakeslack.Config{Conversations: []fakeslack.Conversation{
		{ID: "C1", Members: []string{"UANA"}}, {ID: "C2", Members: []string{"UANA"}}, {ID: "C3", Error: "internal_error"},
	}})
	say := func(channel, channelType string) audience.Audience {
		t.Helper()
		h.inject(fakeslack.Event{Channel: channel, ChannelType: channelType, User: "UANA", Text: "<@UBOT> hi"})
		return h.sink.next(t).Audience
	}
	// Made private without the app being told: the next message says
	// "group", which the public description contradicts.
	if a := say("C1", ""); a != teamOf(team1) {
		t.Fatalf("public channel: %q", a)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C1", Private: true})
	if a := say("C1", ""); a != privateTo(team1, "C1") {
		t.Errorf("a message saying \"group\" of a channel known as public: %q", a)
	}

	// A mention within the bound is answered from what is known; at the
	// bound, from a fresh lookup.
	if a := mention(h, "C2"); a != teamOf(team1) {
		t.Fatalf("public channel: %q", a)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C2", Members: []string{"UANA", "UGUS"}})
	clock.Advance(mentionFresh - time.Second)
	if a := mention(h, "C2"); a != teamOf(team1) {
		t.Errorf("a mention within %s: %q, want what was known", mentionFresh, a)
	}
	clock.Advance(time.Second)
	if a := mention(h, "C2"); a != sharedTo(team1, "C2") {
		t.Errorf("a mention %s after the lookup: %q, want a fresh one (a guest joined)", mentionFresh, a)
	}
	// A message event that agrees is answered from what is known for
	// convTTL.
	h.fake.SetConversation(fakeslack.Conversation{ID: "C2", Members: []string{"UANA"}})
	if a := say("C2", "channel"); a != sharedTo(team1, "C2") {
		t.Errorf("a message within %s: %q, want what was known", convTTL, a)
	}
	clock.Advance(convTTL)
	if a := say("C2", "channel"); a != teamOf(team1) {
		t.Errorf("a message %s later: %q", convTTL, a)
	}

	// A failed lookup: the narrower audience, for convFailTTL.
	if a := mention(h, "C3"); a != sharedTo(team1, "C3") {
		t.Errorf("lookup failing: %q", a)
	}
	h.fake.SetConversation(fakeslack.Conversation{ID: "C3", Members: []string{"UANA"}})
	clock.Advance(convFailTTL - time.Second)
	if a := mention(h, "C3"); a != sharedTo(team1, "C3") {
		t.Errorf("within %s of the failure: %q", convFailTTL, a)
	}
	clock.Advance(time.Second)
	if a := mention(h, "C3"); a != teamOf(team1) {
		t.Errorf("lookup working again: %q", a)
	}
}

// A lookup that was under way when a change was announced does not put
// its older answer back.
func TestConvCacheKeepsNoAnswerOlderThanADrop(t *testing.T) {
	c := newConvCache(time.Now)
	_, _, seen := c.get("C1")
	c.drop("C1") // announced while the lookup was under way
	c.put("C1", seen, channelInfo{kind: convPublic})
	if _, has, _ := c.get("C1"); has {
		t.Error("an answer read before the drop was kept")
	}
	_, _, seen = c.get("C1")
	c.put("C1", seen, channelInfo{kind: convPrivate})
	if info, has, _ := c.get("C1"); !has || info.kind != convPrivate {
		t.Errorf("an answer read after the drop: %+v %v", info, has)
	}
	_, _, seen = c.get("C2")
	c.dropAll()
	c.put("C2", seen, channelInfo{kind: convPublic})
	if _, has, _ := c.get("C2"); has {
		t.Error("an answer read before a reconnection was kept")
	}
}
