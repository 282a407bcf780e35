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
