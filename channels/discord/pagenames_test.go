package discord

import (
	"testing"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// The memory page's names: a member as the server shows them, a DM's
// person by their user, a channel by its name; nothing for what Discord
// does not know.
func TestPageNames(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.fake.SetMember("G1", fakediscord.User{ID: "U7", Username: "alice"})
	ctx := t.Context()
	if got := h.a.PersonName(ctx, "G1", "U7"); got != "alice" {
		t.Errorf("a member: %q", got)
	}
	if got := h.a.PersonName(ctx, "", "U7"); got != "alice" {
		t.Errorf("a DM's person: %q", got)
	}
	if got := h.a.PersonName(ctx, "G1", "U404"); got != "" {
		t.Errorf("someone not in the server: %q", got)
	}
	if got := h.a.ChatName(ctx, "G1", "C1"); got != "general" {
		t.Errorf("a channel: %q", got)
	}
	// The name a person chose (global_name) before their user name, and
	// in a server the nickname they go by there before both.
	h.fake.SetMember("G1", fakediscord.User{ID: "U8", Username: "bob_99", GlobalName: "Bob"})
	h.fake.SetNick("G1", "U8", "Bobby")
	if got := h.a.PersonName(ctx, "G1", "U8"); got != "Bobby" {
		t.Errorf("a member with a nickname: %q", got)
	}
	if got := h.a.PersonName(ctx, "", "U8"); got != "Bob" {
		t.Errorf("a DM's person with a display name: %q", got)
	}
}
