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
}
