package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A body that arrives whole but stops half-way through its JSON is a
// malformed answer, not a broken connection: it is named so (without the
// endpoint) and not retried.
func TestTruncatedJSONIsMalformedNotABrokenConnection(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetResponder(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + llmtest.BodyMarker}
	})
	c := newClient(t, srv.URL(), nil)
	_, err := c.Chat(t.Context(), userReq("hi"))
	checkError(t, err, llm.ErrMalformed, 200, "not a complete chat completion")
	var le *llm.Error
	if errors.As(err, &le) && (strings.Contains(le.Reason, "connection") || strings.Contains(le.Reason, srv.URL())) {
		t.Errorf("Reason = %q: a malformed body is not a broken connection", le.Reason)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests; a malformed answer is not retried", n)
	}
}

// A body cut off by the connection (fewer bytes than announced) is still a
// broken connection, retried.
func TestBodyCutByTheConnectionBrokeOff(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[`))
		// Returning with fewer bytes than announced closes the connection.
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/v1", func(cfg *llm.Config) { cfg.MaxTries = 2 })
	_, err := c.Chat(t.Context(), userReq("hi"))
	checkError(t, err, llm.ErrUnavailable, 200, "broke off")
	if n := hits.Load(); n != 2 {
		t.Errorf("server saw %d requests, want 2 (a broken connection is retried)", n)
	}
}

// Chat users who are not the operator hear one plain sentence; the
// operator's sentence keeps the detail.
func TestPublicMessageHidesOperatorDetail(t *testing.T) {
	failures := []error{
		&llm.Error{Kind: llm.ErrRejected, Status: 404, Reason: "HTTP 404"},
		&llm.Error{Kind: llm.ErrRejected, Status: 401, Reason: "HTTP 401"},
		&llm.Error{Kind: llm.ErrUnavailable, Reason: "the connection to http://127.0.0.1:9/v1 broke off"},
		&llm.Error{Kind: llm.ErrMalformed, Reason: "the response was not a chat completion"},
		context.DeadlineExceeded,
		errors.New("anything else"),
	}
	for _, err := range failures {
		got := llm.PublicMessage(err)
		if got != llm.OperatorAbsent {
			t.Errorf("PublicMessage(%v) = %q, want %q", err, got, llm.OperatorAbsent)
		}
		if op := llm.UserMessage(err); op == got {
			t.Errorf("UserMessage(%v) = %q: the operator's sentence should keep the detail", err, op)
		}
	}
	if got := llm.PublicMessage(context.Canceled); got != "The request was cancelled." {
		t.Errorf("PublicMessage(Canceled) = %q", got)
	}
	if got := llm.PublicMessage(nil); got != "" {
		t.Errorf("PublicMessage(nil) = %q", got)
	}
}

// An error body go-openai cannot read ({"error":"…"}) is still the HTTP
// status it came with, not an error event mid-stream.
func TestUnreadableErrorBodyKeepsItsStatus(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Reply{Status: 401, Body: `{"error":"string"}`})
	c := newClient(t, srv.URL(), nil)
	_, err := c.Chat(t.Context(), userReq("hi"))
	checkError(t, err, llm.ErrRejected, 401, "HTTP 401")
	if got := llm.UserMessage(err); !strings.Contains(got, "refused the API key") {
		t.Errorf("UserMessage = %q", got)
	}
}
