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
	mu           sync.Mutex
	asked        []audience.Audience
	operatorOnly bool // the page has no token
}

func (f *fakeLinks) SignInLink(a audience.Audience) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.operatorOnly {
		return "", fmt.Errorf("no token: %w", ErrNoWebSignIn)
	}
	if !a.Direct() {
		return "", fmt.Errorf("a link for %s", a)
	}
	f.asked = append(f.asked, a)
	return "http://127.0.0.1:18791/signin?link=LINK-" + a.Person, nil
}

// /web-link sends a person, in their DM, a link that signs them in as
// themselves; in a channel, a group or another person's DM (a sender who
// is not the DM's person) it sends none and says to ask in a DM; the
// operator is told the page needs no link; without the page it says the
// page is off.
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
	if got := ask(operator, "U1"); strings.Contains(got, "LINK-") || !strings.Contains(got, "needs no link") {
		t.Errorf("the operator: %q", got)
	}
	if len(links.asked) != 2 || links.asked[0] != anaDM || links.asked[1] != guestDM {
		t.Errorf("links made for %v, want Ana's DM, then her DM as a guest", links.asked)
	}
	links.operatorOnly = true
	if got := ask(anaDM, anaDM.Person); strings.Contains(got, "LINK-") || !strings.Contains(got, "web.token") {
		t.Errorf("a page without a token: %q", got)
	}
}
