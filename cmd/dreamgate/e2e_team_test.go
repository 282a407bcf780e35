package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// In a channel where several people talk to the bot (one conversation),
// the model reads who said what once there is more than one of them, and
// the archive transcript names them, so that the archive (and Dream after
// it) never gives one person's words to another. Through the binary,
// Discord's wire protocol and the archive call of /new.
func TestTeamChannelArchiveNamesWhoSaidWhat(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("G1", fakediscord.Channel{ID: "C7", Name: "team", Type: fakediscord.ChannelText})
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(), "groupPolicy": "open", "slashCommands": false})
	var mu sync.Mutex
	var transcripts []string
	var turns [][]string // the user messages of each chat call
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if isArchiveCall(r) {
			transcripts = append(transcripts, r.Messages[len(r.Messages)-1].Content)
			return llmtest.Text("(nothing)")
		}
		var users []string
		for _, m := range r.Messages {
			if m.Role == "user" {
				// The runtime header on the newest message is not the
				// message (gateway tests pin it).
				if rest, ok := strings.CutPrefix(m.Content, "[Now: "); ok {
					_, m.Content, _ = strings.Cut(rest, "]\n\n")
				}
				users = append(users, m.Content)
			}
		}
		turns = append(turns, users)
		return llmtest.Text("noted")
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	ctx := waitCtx(t)
	say := func(id, name, text string, answers int) {
		t.Helper()
		if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: "C7", Author: fakediscord.User{ID: id, Username: name}, Content: text}); err != nil {
			t.Fatal(err)
		}
		if _, err := dc.WaitSent(ctx, answers); err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
	}
	say("U1", "ana", "I prefer tea in the afternoon.", 1)
	say("U2", "bob", "I prefer coffee in the morning.", 2)
	mu.Lock()
	// Each message is named from the start, so Ana's reads the same once
	// Bob speaks (the prompt's prefix stays put for the provider's cache).
	if len(turns) != 2 || strings.Join(turns[0], "|") != "[ana] I prefer tea in the afternoon." ||
		strings.Join(turns[1], "|") != "[ana] I prefer tea in the afternoon.|[bob] I prefer coffee in the morning." {
		t.Errorf("the model read %q; want each message under its sender's name, Ana's unchanged", turns)
	}
	mu.Unlock()
	say("U1", "ana", "/new", 3)

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(transcripts, "\n")
		mu.Unlock()
		if strings.Contains(got, "tea") {
			if !strings.Contains(got, "USER (ana): I prefer tea in the afternoon.") || !strings.Contains(got, "USER (bob): I prefer coffee in the morning.") {
				t.Fatalf("the archive transcript does not say who said what:\n%s", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no archive of the conversation; log:\n%s", gw.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
