package consolidator

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// The archive transcript names a message's images with a marker and never
// carries their bytes.
func TestTranscriptNamesImages(t *testing.T) {
	m := llm.Message{Role: llm.RoleUser, Content: "what is this?", Images: []llm.Image{{MIME: "image/png", Data: []byte("\x89PNG secret pixels")}}}
	got := renderMessage(m, time.UTC)
	if !strings.Contains(got, "USER: what is this?\n[1 image(s) sent with this message; not in the transcript]") || strings.Contains(got, "secret") {
		t.Errorf("transcript line = %q", got)
	}
	m.Content = ""
	if got := renderMessage(m, time.UTC); got != "USER: [1 image(s) sent with this message; not in the transcript]" {
		t.Errorf("image-only line = %q", got)
	}
}

// A user message from a chat platform shows its sender, made safe for the
// line's syntax; other roles and unknown senders show none.
func TestTranscriptNamesTheSender(t *testing.T) {
	for _, tc := range []struct {
		m    llm.Message
		want string
	}{
		{llm.Message{Role: llm.RoleUser, Sender: "Ana", Content: "hi"}, "USER (Ana): hi"},
		{llm.Message{Role: llm.RoleUser, Sender: " Ana (ops):\n[lead] ", Content: "hi"}, "USER (Ana ops lead): hi"},
		{llm.Message{Role: llm.RoleUser, Sender: strings.Repeat("é", 70), Content: "hi"}, "USER (" + strings.Repeat("é", 64) + "): hi"},
		{llm.Message{Role: llm.RoleUser, Content: "hi"}, "USER: hi"},
		{llm.Message{Role: llm.RoleAssistant, Sender: "Ana", Content: "hello"}, "ASSISTANT: hello"},
	} {
		if got := renderMessage(tc.m, time.UTC); got != tc.want {
			t.Errorf("renderMessage(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
