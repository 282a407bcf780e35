package gateway

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// An image sent with a message reaches the model, through the real client,
// as an image_url part on that turn's user message only; the session file
// keeps a marker naming it and not its bytes, and the next turn's replay
// carries the marker (which says the image is no longer visible), not the
// image.
func TestImagesShownForTheirTurnOnly(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR chart pixels")
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("A bar chart."), llmtest.Text("Sales went up."))
	client := llm.New(llm.Config{BaseURL: srv.URL(), Model: "vision", Timeout: 10 * time.Second})
	dir := filepath.Join(t.TempDir(), "sessions")
	store, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	env := newTestEnv(t, nil, func(_ *Config, d *Deps) { d.Model, d.Sessions = client, store })

	in := inbound("s1", "what is this?")
	in.Images = []channels.Image{{Name: "chart.png", MIME: "image/png", Data: png}}
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); r.Err != nil || r.Reply != "A bar chart." {
		t.Fatalf("turn 1: %+v", r)
	}
	done, err = env.g.Submit(t.Context(), inbound("s1", "and the trend?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); r.Err != nil {
		t.Fatalf("turn 2: %+v", r)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Problem != "" {
			t.Fatalf("request %d refused by the fake: %s", i, r.Problem)
		}
	}
	const marker = "[image chart.png (PNG, 29 bytes): attached to this message; visible only while answering it, not kept]"
	first := reqs[0].Messages[len(reqs[0].Messages)-1]
	if first.Role != llm.RoleUser || len(first.Images) != 1 || !bytes.Equal(first.Images[0].Data, png) || first.Images[0].MIME != "image/png" {
		t.Errorf("turn 1's user message: role %s, images %+v", first.Role, first.Images)
	}
	if first.Content != "what is this?\n\n"+marker {
		t.Errorf("turn 1's user message text = %q", first.Content)
	}
	var replayed bool
	for _, m := range reqs[1].Messages {
		if len(m.Images) > 0 {
			t.Errorf("turn 2 still sends an image on a %s message %q", m.Role, m.Content)
		}
		replayed = replayed || strings.Contains(m.Content, marker)
	}
	if !replayed {
		t.Error("turn 2's replay lacks the marker naming the image")
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no session file")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("IHDR")) || bytes.Contains(raw, []byte("iVBOR")) {
			t.Errorf("%s holds the image bytes", filepath.Base(f))
		}
		if !bytes.Contains(raw, []byte("chart.png")) {
			t.Errorf("%s does not name the image", filepath.Base(f))
		}
	}
}

// A message that is saved without being answered (cut for its length)
// names its images as never shown.
func TestImagesOfAnUnansweredMessageAreNamed(t *testing.T) {
	env := newTestEnv(t, nil, func(c *Config, _ *Deps) { c.MaxMessageBytes = 8 })
	in := inbound("s1", "far too long for the limit")
	in.Images = []channels.Image{{Name: "a.png", MIME: "image/png", Data: []byte("x")}}
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	sess, err := env.sessions.Get("test:s1")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := sess.Messages(); len(msgs) == 0 || !strings.HasSuffix(msgs[0].Content, "\n\n[image a.png: sent with this message, never shown to the assistant]") {
		t.Errorf("saved messages = %+v", msgs)
	}
}
