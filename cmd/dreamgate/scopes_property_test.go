package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The rule as a property, in process through the app's own wiring (the
// gateway, the consolidator, Dream, the rule-following model): random
// conversations in random audiences each plant a token; after Dream, no
// prompt, tool result or answer of a conversation holds a token of an
// audience it may not read, and every token is in the prompt of a fresh
// conversation of its own audience.
func TestScopesProperty(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { scopesProperty(t, seed) })
	}
}

// randomAudience draws from a small pool, so that audiences meet: two
// platforms, two teams each, three people, two private channels, a shared
// channel.
func randomAudience(r *rand.Rand) audience.Audience {
	platform := []string{"slack", "discord"}[r.IntN(2)]
	team := []string{"T1", "T2"}[r.IntN(2)]
	a := audience.Audience{Platform: platform, Team: team}
	switch r.IntN(4) {
	case 0:
		a.Kind, a.Person = audience.Person, []string{"U1", "U2", "U3"}[r.IntN(3)]
		if platform == "discord" {
			a.Team = "" // a Discord DM belongs to no server
		}
	case 1:
		a.Kind, a.Chat = audience.Private, []string{"G1", "G2"}[r.IntN(2)]
	case 2:
		a.Kind = audience.Team
	default:
		a.Kind, a.Chat = audience.Shared, "C9"
	}
	return a
}

// propChannel records what the gateway sends, by session key.
type propChannel struct {
	mu   sync.Mutex
	sent map[string][]string
}

func (c *propChannel) Name() string                                   { return "prop" }
func (c *propChannel) Run(ctx context.Context, _ channels.Sink) error { <-ctx.Done(); return nil }
func (c *propChannel) Send(_ context.Context, out channels.Outbound) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[out.SessionKey] = append(c.sent[out.SessionKey], out.Text)
	return nil
}

func scopesProperty(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 20))
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	a := h.app()
	g, d := a.gateway(true)
	if d == nil {
		t.Fatal("no Dream")
	}
	ch := &propChannel{sent: map[string][]string{}}
	g.AddChannel(ch)
	t.Cleanup(func() {
		ctx, cancel := shutdownContext()
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	type conv struct {
		key   string
		aud   audience.Audience
		token string
	}
	say := func(c conv, text string) gateway.Result {
		t.Helper()
		sender := "UX"
		if c.aud.Kind == audience.Person {
			sender = c.aud.Person
		}
		done, err := g.Submit(t.Context(), channels.Inbound{Channel: "prop", ChatID: c.key, SessionKey: c.key,
			SenderID: sender, SenderName: sender, Audience: c.aud, MessageID: fmt.Sprint(r.Uint64()), Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	var convs []conv
	for i := range 10 {
		c := conv{key: fmt.Sprintf("prop:%d", i), aud: randomAudience(r), token: fmt.Sprintf("TOKEN%dQ%d", seed, i)}
		convs = append(convs, c)
		say(c, fmt.Sprintf("FACT: The code word number %d is %s.", i, c.token))
	}
	// Archived as the idle timer would, each under its audience, then
	// dreamed until nothing is left.
	cons := a.consolidator(a.limited())
	for _, c := range convs {
		sess, err := a.sessions.Get(c.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cons.ArchiveTail(t.Context(), sess); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		rep, err := d.Run(t.Context(), dream.TriggerCLI, dream.AllScopes(), nil)
		if err != nil {
			t.Fatalf("Dream: %+v, %v", rep, err)
		}
		if rep.Outcome == dream.OutcomeNothingNew {
			break
		}
	}
	// Every conversation, and a fresh one of each audience, asks for every
	// token and reads its files.
	var askers []conv
	for i, c := range convs {
		askers = append(askers, c, conv{key: fmt.Sprintf("prop:fresh%d", i), aud: c.aud})
	}
	for _, c := range askers {
		for i := range convs {
			say(c, fmt.Sprintf("What is the code word number %d?", i))
		}
		say(c, "please read USER.md")
		say(c, "please read memory/MEMORY.md")
		say(c, "/dream-log")
	}
	audOf := map[string]audience.Audience{}
	for _, c := range askers {
		audOf[c.key] = c.aud
	}
	reported := map[string]bool{}
	check := func(where string, a audience.Audience, text string) {
		for _, c := range convs {
			if !a.MayRead(c.aud.Home()) && strings.Contains(text, c.token) {
				msg := fmt.Sprintf("%s of %v holds %s, said in %v", where, a, c.token, c.aud)
				if !reported[msg] {
					reported[msg] = true
					t.Error(msg)
				}
			}
		}
	}
	inPrompt := map[string]string{} // the last system prompt of each conversation
	for _, req := range h.llm.Requests() {
		key := chatKey(req)
		if key == "" {
			continue
		}
		check("a prompt", audOf[key], requestText(req))
		inPrompt[key] = req.Messages[0].Content
	}
	ch.mu.Lock()
	for key, texts := range ch.sent {
		check("an answer", audOf[key], strings.Join(texts, "\n"))
	}
	ch.mu.Unlock()
	for i, c := range convs {
		if fresh := fmt.Sprintf("prop:fresh%d", i); !strings.Contains(inPrompt[fresh], c.token) {
			t.Errorf("a fresh conversation of %v does not have %s in its prompt", c.aud, c.token)
		}
	}
	for _, problem := range checkFsck(h.ws) {
		t.Error(problem)
	}
}
