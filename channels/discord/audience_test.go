package discord

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

func serverOf(guild string) audience.Audience {
	return audience.Audience{Kind: audience.Team, Platform: Name, Team: guild}
}

func privateIn(guild, chat string) audience.Audience {
	return audience.Audience{Kind: audience.Private, Platform: Name, Team: guild, Chat: chat}
}

// audienceHarness runs the usual harness (guild G1: C1, C2, thread T1 of
// C1; DMs D1, D2), the channel cache on clock, with more conversations of
// every kind: announced in G1, a private channel (CP), a public thread of
// it (TP), a private thread of C1 (TX); added once connected, so that only
// REST knows them, a private channel (CQ), a channel whose lookup fails
// (CF) and a thread whose parent's lookup fails (TF under CPF); a second
// server G2 with its channel C9; a server G3 whose @everyone may not view
// channels, with a channel open to some role (CR), its thread (TR), and a
// channel that lets @everyone in (CE).
func audienceHarness(t *testing.T, o harnessOpts, clock func() time.Time) *harness {
	t.Helper()
	o.cfg.GroupPolicy = PolicyOpen
	o.noStart = true
	h := newHarness(t, o)
	hidden := []fakediscord.Overwrite{
		{ID: "G1", Type: fakediscord.OverwriteRole, Deny: fakediscord.PermViewChannel},
		{ID: "U1", Type: fakediscord.OverwriteMember, Allow: fakediscord.PermViewChannel},
	}
	h.fake.AddGuild("G1",
		fakediscord.Channel{ID: "C2", Name: "random", Type: fakediscord.ChannelText,
			// Others may be kept out; @everyone is not.
			Overwrites: []fakediscord.Overwrite{{ID: "MUTED", Type: fakediscord.OverwriteRole, Deny: fakediscord.PermViewChannel}}},
		fakediscord.Channel{ID: "CP", Name: "staff", Type: fakediscord.ChannelText, Overwrites: hidden},
		fakediscord.Channel{ID: "TP", Name: "staff thread", ParentID: "CP", Type: fakediscord.ChannelPublicThread},
		fakediscord.Channel{ID: "TX", Name: "secret", ParentID: "C1", Type: fakediscord.ChannelPrivateThread},
	)
	h.fake.AddGuild("G2", fakediscord.Channel{ID: "C9", Name: "general", Type: fakediscord.ChannelText})
	h.fake.SetEveryone("G3", fakediscord.DefaultEveryone&^fakediscord.PermViewChannel)
	h.fake.AddGuild("G3",
		fakediscord.Channel{ID: "CR", Type: fakediscord.ChannelText,
			Overwrites: []fakediscord.Overwrite{{ID: "STAFF", Type: fakediscord.OverwriteRole, Allow: fakediscord.PermViewChannel}}},
		fakediscord.Channel{ID: "TR", ParentID: "CR", Type: fakediscord.ChannelPublicThread},
		fakediscord.Channel{ID: "CE", Type: fakediscord.ChannelText,
			Overwrites: []fakediscord.Overwrite{{ID: "G3", Type: fakediscord.OverwriteRole, Allow: fakediscord.PermViewChannel}}},
	)
	h.a.chans = newChannelCache(maxCachedChannels, clock)
	h.start()
	if err := h.fake.WaitSessions(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	h.fake.AddChannel(fakediscord.Channel{ID: "CQ", GuildID: "G1", Type: fakediscord.ChannelText, Overwrites: hidden})
	h.fake.AddChannel(fakediscord.Channel{ID: "CF", GuildID: "G1", Type: fakediscord.ChannelText})
	h.fake.FailChannelLookup("CF", 403)
	h.fake.AddChannel(fakediscord.Channel{ID: "CPF", GuildID: "G1", Type: fakediscord.ChannelText})
	h.fake.FailChannelLookup("CPF", 403)
	h.fake.AddChannel(fakediscord.Channel{ID: "TF", GuildID: "G1", ParentID: "CPF", Type: fakediscord.ChannelPublicThread})
	return h
}

// Every kind of conversation gets its audience from what Discord says of
// it: a DM has no guild, a channel's overwrites say whether @everyone sees
// it, a thread is private or takes its parent's.
func TestAudienceOfEachConversation(t *testing.T) {
	t.Parallel()
	logs := &testkit.LogRecorder{}
	o := commandOpts()
	o.cfg.Logger = logs.Logger()
	h := audienceHarness(t, o, nil)
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, channel string
		want          audience.Audience
	}{
		{"DM", "D1", audience.Audience{Kind: audience.Person, Platform: Name, Person: "U1"}},
		{"public channel", "C1", serverOf("G1")},
		{"channel closed to a role the server does not have", "C2", serverOf("G1")},
		{"public thread of a public channel", "T1", serverOf("G1")},
		{"private channel (announced)", "CP", privateIn("G1", "CP")},
		{"private channel (looked up)", "CQ", privateIn("G1", "CQ")},
		{"public thread of a private channel", "TP", privateIn("G1", "CP")},
		{"private thread", "TX", privateIn("G1", "TX")},
		{"channel Discord will not describe", "CF", privateIn("G1", "CF")},
		{"thread whose parent Discord will not describe", "TF", privateIn("G1", "CPF")},
		{"second server", "C9", serverOf("G2")},
		{"closed server, channel open to a role", "CR", privateIn("G3", "CR")},
		{"closed server, thread of that channel", "TR", privateIn("G3", "CR")},
		{"closed server, channel open to @everyone", "CE", serverOf("G3")},
	}
	for _, c := range cases {
		id := h.inject(fakediscord.Message{ChannelID: c.channel, Content: "hi"})
		if in := h.expectNext(id); in.Audience != c.want {
			t.Errorf("%s: audience %q, want %q", c.name, in.Audience, c.want)
		}
		// A slash command there has the same audience.
		if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: c.channel, User: fakediscord.User{ID: "U1"}, Command: "dream-log"}); err != nil {
			t.Fatal(err)
		}
		if in := h.next(); in.Audience != c.want {
			t.Errorf("%s, slash command: audience %q, want %q", c.name, in.Audience, c.want)
		}
	}
	if serverOf("G1").Home() == serverOf("G2").Home() {
		t.Error("two servers share a scope")
	}
	// Announced channels need no lookup; looked-up ones are kept.
	for path, want := range map[string]int{
		"/api/v9/channels/C1": 0, "/api/v9/channels/CP": 0, "/api/v9/channels/TX": 0,
		"/api/v9/channels/CQ": 1, "/api/v9/channels/TF": 1,
	} {
		if n := countRequests(h.fake, "GET", path); n != want {
			t.Errorf("GET %s: %d times, want %d", path, n, want)
		}
	}
	// A failed lookup is said once and kept a while, not repeated per
	// message.
	var failed []string
	for _, r := range logs.Find(slog.LevelWarn, "channel lookup failed") {
		failed = append(failed, r.Attrs["chat"])
	}
	if got := strings.Join(failed, " "); got != "CF CPF" {
		t.Errorf("failed lookups logged for %q, want CF CPF", got)
	}
	for _, path := range []string{"/api/v9/channels/CF", "/api/v9/channels/CPF"} {
		if n := countRequests(h.fake, "GET", path); n != 1 {
			t.Errorf("GET %s: %d times, want 1", path, n)
		}
	}
}

func countRequests(f *fakediscord.Server, method, path string) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// A channel made private is private from the next message: the gateway
// says so (CHANNEL_UPDATE), or, for what it did not say, the cached answer
// expires.
func TestAudienceFollowsPrivacyChanges(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	h := audienceHarness(t, harnessOpts{}, clock.Now)
	say := func(channel string) audience.Audience {
		t.Helper()
		return h.expectNext(h.inject(fakediscord.Message{ChannelID: channel, Content: "hi"})).Audience
	}
	hidden := []fakediscord.Overwrite{fakediscord.Hidden("G1")}

	if a := say("C2"); a != serverOf("G1") {
		t.Fatalf("C2: %q", a)
	}
	h.fake.UpdateChannel(fakediscord.Channel{ID: "C2", GuildID: "G1", Name: "random", Type: fakediscord.ChannelText, Overwrites: hidden})
	if a := say("C2"); a != privateIn("G1", "C2") {
		t.Errorf("C2 after CHANNEL_UPDATE: %q", a)
	}
	if a := say("T1"); a != serverOf("G1") {
		t.Errorf("T1 of a public C1: %q", a)
	}
	h.fake.UpdateChannel(fakediscord.Channel{ID: "C1", GuildID: "G1", Name: "general", Type: fakediscord.ChannelText, Overwrites: hidden})
	if a := say("T1"); a != privateIn("G1", "C1") {
		t.Errorf("T1 of C1 made private: %q", a)
	}

	// The server closed to @everyone (GUILD_ROLE_UPDATE): its channels
	// without an overwrite letting @everyone in are private; opened
	// again, they are the server's.
	if a := say("C9"); a != serverOf("G2") {
		t.Fatalf("C9: %q", a)
	}
	h.fake.SetEveryone("G2", fakediscord.DefaultEveryone&^fakediscord.PermViewChannel)
	if a := say("C9"); a != privateIn("G2", "C9") {
		t.Errorf("C9 of a server closed to @everyone: %q", a)
	}
	h.fake.SetEveryone("G2", fakediscord.DefaultEveryone)
	if a := say("C9"); a != serverOf("G2") {
		t.Errorf("C9 of a server opened again: %q", a)
	}

	// CQ changes silently (an update missed): the old answer stands for
	// chanTTL, then Discord is asked again.
	if a := say("CQ"); a != privateIn("G1", "CQ") {
		t.Fatalf("CQ: %q", a)
	}
	h.fake.AddChannel(fakediscord.Channel{ID: "CQ", GuildID: "G1", Type: fakediscord.ChannelText})
	clock.Advance(chanTTL - time.Second)
	if a := say("CQ"); a != privateIn("G1", "CQ") {
		t.Errorf("CQ within the TTL: %q", a)
	}
	clock.Advance(time.Second)
	if a := say("CQ"); a != serverOf("G1") {
		t.Errorf("CQ made public, after the TTL: %q", a)
	}
}
