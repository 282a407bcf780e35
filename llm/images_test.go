package llm_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A message's images reach the provider as OpenAI image_url parts with
// data: URLs beside the text part, plain and streamed; a message without
// images keeps string content, and the session form never holds the bytes.
func TestImagesSentAsParts(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake pixels")
	for _, stream := range []bool{false, true} {
		srv := llmtest.New(t)
		srv.Push(llmtest.Text("a chart"))
		c := newClient(t, srv.URL(), nil)
		req := llm.Request{Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleUser, Content: "earlier"},
			{Role: llm.RoleAssistant, Content: "ok"},
			{Role: llm.RoleUser, Content: "what is this?", Images: []llm.Image{{MIME: "image/png", Data: png}}},
		}}
		if stream {
			req.OnDelta = func(string) {}
		}
		if _, err := c.Chat(t.Context(), req); err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		reqs := srv.Requests()
		mustValid(t, reqs)
		got := reqs[0].Messages
		last := got[len(got)-1]
		if last.Content != "what is this?" || len(last.Images) != 1 || last.Images[0].MIME != "image/png" || !bytes.Equal(last.Images[0].Data, png) {
			t.Errorf("stream=%v: last message = %q with images %+v", stream, last.Content, last.Images)
		}
		if len(got[1].Images) != 0 {
			t.Errorf("stream=%v: an earlier message carries images", stream)
		}
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if c := body.Messages[1].Content; c[0] != '"' {
			t.Errorf("stream=%v: a message without images is sent as parts: %s", stream, c)
		}
		if c := string(body.Messages[3].Content); !bytes.Contains([]byte(c), []byte(`"type":"image_url"`)) ||
			!bytes.Contains([]byte(c), []byte(`"url":"data:image/png;base64,iVBORw0KGgpmYWtlIHBpeGVscw=="`)) {
			t.Errorf("stream=%v: image message on the wire = %s", stream, c)
		}
	}

	line, err := json.Marshal(llm.Message{Role: llm.RoleUser, Content: "x", Images: []llm.Image{{MIME: "image/png", Data: png}}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(line, []byte("PNG")) || bytes.Contains(line, []byte("iVBOR")) || bytes.Contains(line, []byte("mage")) {
		t.Errorf("the stored form carries the image: %s", line)
	}
}
