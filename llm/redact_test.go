package llm_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A provider that echoes the refused key in its error body: the key never
// reaches the error text, nor a log that records the error.
func TestRefusedKeyIsRedactedFromErrors(t *testing.T) {
	const echoed = "sk-or-v1-0123456789abcdef" // another key-shaped token
	srv := llmtest.New(t)
	srv.SetResponder(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey +
			` (also tried ` + echoed + `)","type":"invalid_request_error","code":"invalid_api_key"}}`}
	})
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newClient(t, srv.URL(), func(cfg *llm.Config) { cfg.Logger = log })
	_, err := c.Chat(t.Context(), userReq("hi"))
	if !errors.Is(err, llm.ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	log.Error("turn failed", "err", err) // as the gateway logs it
	for name, s := range map[string]string{"error": err.Error(), "log": logs.String()} {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") || strings.Contains(s, echoed) {
			t.Errorf("%s holds the key: %s", name, s)
		}
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided: [redacted]") {
		t.Errorf("error = %q, want the provider's message with the key redacted", err)
	}
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 401 {
		t.Errorf("err = %#v, want an *llm.Error with status 401", err)
	}
}
