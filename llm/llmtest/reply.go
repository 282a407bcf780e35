package llmtest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// BodyMarker occurs in every error body and malformed body the fake sends,
// so a test can assert that no provider body reached a user or a Reason.
const BodyMarker = "llmtest-provider-body"

// Reply is one scripted answer. The zero Reply is an empty assistant
// message with finish_reason "stop".
type Reply struct {
	// Text is the assistant's content.
	Text string
	// ToolCalls are the calls the assistant makes. An empty ID is filled by
	// the server with a unique "call_<n>".
	ToolCalls []llm.ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise. "-" sends none (finish_reason null).
	FinishReason string
	// Usage is reported as given; nil means the estimate described in the
	// package doc.
	Usage *llm.Usage
	// Model is the model the reply names; empty echoes the request's.
	Model string

	// Status, when neither 0 nor 200, makes this an error answer with a JSON
	// body in OpenAI's shape.
	Status int
	// RetryAfter is sent as the Retry-After header when non-empty.
	RetryAfter string
	// Body, when non-empty, is sent verbatim (with Status, default 200)
	// instead of a generated answer, for streamed requests too.
	Body string

	// Delay is waited before answering; it ends early when the client gives
	// up or the server closes.
	Delay time.Duration
	// Fragments are the content pieces of a streamed answer; empty means
	// Text split before each space.
	Fragments []string
	// FragmentDelay is waited between the content fragments of a streamed
	// answer.
	FragmentDelay time.Duration
	// CutAfter, when > 0, aborts a streamed answer's connection after that
	// many content fragments, without finish_reason or [DONE].
	CutAfter int
}

// Text replies with s.
func Text(s string) Reply { return Reply{Text: s} }

// ToolCall replies with one call of the named tool; args is the raw JSON
// arguments text. The server gives it a unique id.
func ToolCall(name, args string) Reply {
	return Reply{ToolCalls: []llm.ToolCall{{Name: name, Arguments: args}}}
}

// Status replies with an HTTP error in OpenAI's JSON shape; retryAfter, when
// non-empty, is sent as the Retry-After header.
func Status(code int, retryAfter string) Reply {
	return Reply{Status: code, RetryAfter: retryAfter}
}

// Malformed replies 200 with a body that is not a chat completion (nor an
// event stream).
func Malformed() Reply {
	return Reply{Body: BodyMarker + ": this is not a chat completion"}
}

// Slow delays r by d. The wait ends early when the client gives up, so a
// client timeout test does not keep the server busy.
func Slow(d time.Duration, r Reply) Reply {
	r.Delay = d
	return r
}

// errorBody is OpenAI's error shape for an HTTP status.
func errorBody(status int) map[string]any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("%s: scripted HTTP %d", BodyMarker, status),
		"type":    typ,
		"param":   nil,
		"code":    code,
	}}
}
