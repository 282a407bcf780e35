package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// fakeLinks makes links as the memory page does, one per audience asked,
// and records who was given one.
type fakeLinks struct {
	mu    sync.Mutex
	asked []audience.Audience
}

func (f *fakeLinks) SignInLink(a audience.Audience) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !a.Direct() && a.Kind != audience.Operator {
		return "", fmt.Errorf("a link for %s", a)
	}
	f.asked = append(f.asked, a)
	if a.Kind == audience.Operator {
		return "http://127.0.0.1:18791/signin?link=LINK-OPERATOR", nil
	}
	return "http://127.0.0.1:18791/signin?link=LINK-" + a.Person, nil
}

// /web-link sends a person, in their DM, a link that signs them in as
// themselves; in a channel, a group or another person's DM (a sender who
// is not the DM's person) it sends none and says to ask in a DM; the
// operator (the terminal) gets a link that signs in as the operator;
// without the page it says the page is off.
func TestWebLinkOnlyInAPersonsOwnDM(t *testing.T) {
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
	links := &fakeLinks{}
	ask := func(a audience.Audience, sender string) string {
		t.Helper()
		in := withAudience(inbound(fmt.Sprint("link-", a.Kind, a.Chat, a.Person, sender), "/web-link"), a)
		in.SenderID = sender
		return wait(t, mustSubmit(t, env, in)).Reply
	}
	if got := ask(anaDM, anaDM.Person); !strings.Contains(got, "memory page is off") {
		t.Errorf("without the page: %q", got)
	}
	env.g.deps.WebLinks = links

	got := ask(anaDM, anaDM.Person)
	if !strings.Contains(got, "http://127.0.0.1:18791/signin?link=LINK-UANA") || !strings.Contains(got, "the team's memory and yours") {
		t.Errorf("Ana's DM: %q", got)
	}
	for _, c := range []struct {
		name   string
		a      audience.Audience
		sender string
	}{
		{"a public channel", slackTeam, anaDM.Person},
		{"a private channel", slackPrivate, anaDM.Person},
		{"Ana's DM, sent by Bob", anaDM, bobDM.Person},
		// A DM between two people, which only Ana's own installation of
		// the app reaches (Discord's user-installed commands): the
		// adapter says it is theirs, not a DM with the bot.
		{"a DM between Ana and Bob", audience.Audience{Kind: audience.Shared, Platform: "discord", Chat: "4001"}, anaDM.Person},
		{"a conversation the platform said nothing of", audience.Unknown("discord:4001"), anaDM.Person},
	} {
		if got := ask(c.a, c.sender); strings.Contains(got, "LINK-") || !strings.Contains(got, "in a direct message") {
			t.Errorf("%s: %q", c.name, got)
		}
	}
	// A guest's link reads what their DM reads: their own memory alone.
	if got := ask(guestDM, guestDM.Person); !strings.Contains(got, "LINK-UANA") || strings.Contains(got, "the team's memory and yours") || !strings.Contains(got, "your own memory") {
		t.Errorf("a guest's DM: %q", got)
	}
	if got := ask(operator, "U1"); !strings.Contains(got, "LINK-OPERATOR") || !strings.Contains(got, "as the operator") {
		t.Errorf("the operator: %q", got)
	}
	if len(links.asked) != 3 || links.asked[0] != anaDM || links.asked[1] != guestDM || links.asked[2].Kind != audience.Operator {
		t.Errorf("links made for %v, want Ana's DM, then her DM as a guest, then the operator", links.asked)
	}
}
