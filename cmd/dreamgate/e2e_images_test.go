package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// llm.images through the binary: an image posted in Slack reaches the model
// as an image part of that turn's request, and the next turn replays only
// the marker naming it.
func TestImagesThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
	})
	h.set("llm.images", true)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("seen")
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
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
	if len(first.Images) != 1 || !bytes.Equal(first.Images[0].Data, png) || !strings.HasPrefix(first.Content, "what is this?\n\n[image chart.png (PNG, ") {
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
}
