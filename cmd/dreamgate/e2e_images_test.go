package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// llm.images through the binary: an image posted in Slack reaches the model
// as an image part of that turn's request, and the next turn replays only
// the marker naming it; a Discord image attachment reaches it too.
func TestImagesThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
	})
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddChannel(fakediscord.Channel{ID: "DM1", Type: 1})
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(), "slashCommands": false})
	h.set("llm.images", true)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("seen")
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	gw.waitConnected(t, "discord")
	ctx := waitCtx(t)

	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pixels")
	if _, err := sl.Inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Text: "what is this?", Files: []fakeslack.File{
		{ID: "F1", Name: "chart.png", Mimetype: "image/png", Filetype: "png", Content: png},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.WaitPosts(ctx, 1); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}
	if _, err := sl.Inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "and now?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.WaitPosts(ctx, 2); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}

	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	first := reqs[0].Messages[len(reqs[0].Messages)-1]
	if len(first.Images) != 1 || !bytes.Equal(first.Images[0].Data, png) || !strings.HasPrefix(llmtest.Spoken(first.Content), "what is this?\n\n[image chart.png (PNG, ") {
		t.Errorf("turn 1's message: %q with %d images", first.Content, len(first.Images))
	}
	var named bool
	for _, m := range reqs[1].Messages {
		if len(m.Images) > 0 {
			t.Errorf("turn 2 sends the image again on %q", m.Content)
		}
		named = named || strings.Contains(m.Content, "[image chart.png (PNG, ")
	}
	if !named {
		t.Error("turn 2's replay does not name the image")
	}

	gif := []byte("GIF89a tiny")
	if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: "DM1", Author: fakediscord.User{ID: "U7"}, Attachments: []fakediscord.File{
		{Name: "cat.gif", ContentType: "image/gif", Data: gif},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.WaitSent(ctx, 1); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}
	reqs = h.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; len(m.Images) != 1 || !bytes.Equal(m.Images[0].Data, gif) || m.Images[0].MIME != "image/gif" {
		t.Errorf("discord turn's message: %q with %+v", m.Content, m.Images)
	}
}
