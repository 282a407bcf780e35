package discord

import (
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// A person who installed the app on their account can run its commands
// where the bot is not: in a DM with someone else (interaction context 2)
// or in a server that did not add the bot. Those conversations are kept
// apart (Shared: their own memory, none of a person's or a server's), so
// the gateway never takes them for a DM with the bot, where a sign-in
// link or a person's memory may be shown; a DM with the bot is still the
// person's.
func TestAudienceOfUserInstalledCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	h.fake.AddChannel(fakediscord.Channel{ID: "DX", Type: fakediscord.ChannelDM, Recipients: []string{"U1", "U2"}})
	h.fake.AddChannel(fakediscord.Channel{ID: "GDX", Type: fakediscord.ChannelGroupDM, Recipients: []string{"U1", "U2", "U3"}})
	h.fake.AddChannel(fakediscord.Channel{ID: "C9", GuildID: "G9", Type: fakediscord.ChannelText})
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, channel string
		want          audience.Audience
		key           string
	}{
		{"DM with the bot", "D1", audience.Audience{Kind: audience.Person, Platform: Name, Person: "U1"}, "discord:D1"},
		{"DM between two people", "DX", audience.Audience{Kind: audience.Shared, Platform: Name, Chat: "DX"}, "discord:DX"},
		{"group DM", "GDX", audience.Audience{Kind: audience.Shared, Platform: Name, Chat: "GDX"}, "discord:GDX"},
		{"server that did not add the bot", "C9", audience.Audience{Kind: audience.Shared, Platform: Name, Team: "G9", Chat: "C9"}, "discord:C9"},
		{"server channel", "C1", serverOf("G1"), "discord:C1"},
	} {
		if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: c.channel, User: fakediscord.User{ID: "U1"}, Command: "dream-log"}); err != nil {
			t.Fatal(err)
		}
		in := h.next()
		if in.Audience != c.want || in.SessionKey != c.key {
			t.Errorf("%s: audience %q, key %q; want %q, %q", c.name, in.Audience, in.SessionKey, c.want, c.key)
		}
	}
	// The bot cannot read where it is not; it does not try.
	for _, path := range []string{"/api/v9/channels/DX", "/api/v9/channels/GDX", "/api/v9/channels/C9", "/api/v9/guilds/G9"} {
		if n := countRequests(h.fake, "GET", path); n != 0 {
			t.Errorf("GET %s: %d times", path, n)
		}
	}
}
