package slack

import (
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// The memory page's names: a person as Slack shows them (users.info), a
// channel by its name (conversations.info, asked once), a DM by none.
func TestPageNames(t *testing.T) {
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{Users: map[string]string{"UANA": "Ana"}}})
	ctx := t.Context()
	if got := h.a.PersonName(ctx, "T1", "UANA"); got != "Ana" {
		t.Errorf("PersonName = %q, want Ana", got)
	}
	if got := h.a.PersonName(ctx, "T1", "UNOBODY"); got != "" {
		t.Errorf("an unknown person: %q", got)
	}
	for range 2 {
		if got := h.a.ChatName(ctx, "T1", "G0PRIV"); got != "chan-G0PRIV" {
			t.Errorf("ChatName = %q", got)
		}
	}
	if n := h.fake.CallCount("conversations.info"); n != 1 {
		t.Errorf("conversations.info asked %d times, want once", n)
	}
	if got := h.a.ChatName(ctx, "T1", "D0ANA"); got != "" {
		t.Errorf("a DM's name: %q", got)
	}
}
