package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// Through the built binary: the gateway's commands are Discord slash
// commands, answered through the interaction; a slow answer streams into
// its message by edits and ends with exactly the final text.
func TestDiscordNativeThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("G1", fakediscord.Channel{ID: "C42", Name: "general", Type: fakediscord.ChannelText})
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()})
	const slow = "Once upon a time the answer took its time."
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(last, "slowly") {
			// Long enough between the two halves for the one-second
			// throttle to show the first.
			return llmtest.Reply{Text: slow, Fragments: []string{"Once upon a time", " the answer took its time."}, FragmentDelay: 3 * time.Second}
		}
		return llmtest.Text("pong: " + last)
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	ctx := waitCtx(t)
	if err := dc.WaitRequest(ctx, "PUT", "/api/v9/applications/"+dc.BotID()+"/commands"); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}
	names := map[string]bool{}
	for _, c := range dc.Commands("") {
		names[c.Name] = true
	}
	for _, want := range []string{"help", "new", "status", "stop", "dream", "dream-log", "dream-restore"} {
		if !names[want] {
			t.Errorf("slash command /%s not declared; have %v", want, names)
		}
	}

	t.Run("slash /help is deferred and answered with the Discord form", func(t *testing.T) {
		if _, err := dc.InjectInteraction(fakediscord.Interaction{ChannelID: "C42", User: fakediscord.User{ID: "U7"}, Command: "help"}); err != nil {
			t.Fatal(err)
		}
		cbs, err := dc.WaitCallbacks(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if cbs[0].Type != fakediscord.CallbackDeferred {
			t.Errorf("callback %+v, want deferred", cbs[0])
		}
		fus, err := dc.WaitFollowups(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if !fus[0].Original || !strings.Contains(fus[0].Content, "/dream-log") || !strings.Contains(fus[0].Content, "type / and pick") {
			t.Errorf("answer = %+v", fus[0])
		}
	})

	t.Run("slash /dream-log sha autocompletes and runs the command", func(t *testing.T) {
		n := len(dc.Callbacks())
		if _, err := dc.InjectInteraction(fakediscord.Interaction{Type: fakediscord.InteractionAutocomplete, ChannelID: "C42",
			User: fakediscord.User{ID: "U7"}, Command: "dream-log", Options: map[string]string{"sha": ""}, Focused: "sha"}); err != nil {
			t.Fatal(err)
		}
		cbs, err := dc.WaitCallbacks(ctx, n+1)
		if err != nil {
			t.Fatal(err)
		}
		if cbs[n].Type != fakediscord.CallbackAutocomplete {
			t.Errorf("autocomplete answered %+v", cbs[n])
		}
		if _, err := dc.InjectInteraction(fakediscord.Interaction{ChannelID: "C42", User: fakediscord.User{ID: "U7"},
			Command: "dream-log", Options: map[string]string{"sha": "zzzz"}}); err != nil {
			t.Fatal(err)
		}
		fus, err := dc.WaitFollowups(ctx, 2)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if got := fus[1].Content; strings.HasPrefix(got, "pong") || !strings.Contains(got, "zzzz") {
			t.Errorf("/dream-log zzzz answered %q", got)
		}
	})

	t.Run("a slow answer streams and ends with the final text", func(t *testing.T) {
		id, err := dc.InjectMessage(fakediscord.Message{ChannelID: "C42", Author: fakediscord.User{ID: "U7"},
			Content: "<@" + dc.BotID() + "> tell it slowly"})
		if err != nil {
			t.Fatal(err)
		}
		sent, err := dc.WaitSent(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if sent[0].Content != "Once upon a time" || sent[0].ReplyTo != id {
			t.Errorf("first post = %+v, want the first half as a reply", sent[0])
		}
		edits, err := dc.WaitEdits(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if edits[len(edits)-1].Content != slow {
			t.Errorf("last edit %q", edits[len(edits)-1].Content)
		}
		if got := dc.Shown("C42", id); len(got) != 1 || got[0] != slow {
			t.Errorf("channel shows %q", got)
		}
	})
}
