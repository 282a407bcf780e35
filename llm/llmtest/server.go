// Package llmtest is a fake OpenAI-compatible chat-completions server for
// tests: an httptest server on 127.0.0.1 that answers from a scripted FIFO
// queue of Replies, plain or streamed (SSE), and records every request.
//
// It reads requests with its own structs, not go-openai's, and refuses
// with a 400 what OpenAI refuses: a message without content, a tool call
// without a result or with two (CheckToolPairs), stream_options without
// stream. Such a request is recorded with its Problem and consumes no
// Reply.
//
// Usage it reports when a Reply does not script it is counted with
// cl100k_base, the way a provider bills a request: prompt tokens are the
// tokens of the request as the provider sees it — the "tools" JSON, then
// each message's JSON, each tokenized on its own — and completion tokens
// those of the reply's text plus its tool names and arguments.
//
// It answers like OpenAI's prompt cache: prompt_tokens_details.cached_tokens
// is the longest prefix of that token sequence (under the same model) that
// an earlier request to this server also began with, counted only when the
// prompt has at least 1,024 tokens and the prefix at least 1,024, and
// rounded down to a multiple of 128 tokens. Nothing is evicted (a provider
// keeps a prefix for minutes after its last use; a test takes less), and
// prompt_cache_key, which only routes requests at OpenAI, changes nothing
// here. Every valid request is remembered, a scripted Usage or an error
// reply included; a request refused with a 400 is not. Request.PromptTokens
// and Request.CachedTokens record what the fake counted for each request.
//
// A test that runs the built binary starts a Server the same way and
// writes URL() into the binary's config as llm.baseURL.
//
// Model is the in-process counterpart, for tests of a package that takes
// a model as a Chat dependency and needs no wire: a FIFO script of Steps.
//
// It imports llm for the message types and nothing else of ours.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/backoff"
	"github.com/dreamgate/dreamgate/llm"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server
	// closed ends with Close, and pending delays with it.
	closed    context.Context
	endClosed context.CancelFunc

	mu        sync.Mutex
	queue     []Reply
	responder func(Request) Reply
	requests  []Request
	changed   chan struct{} // closed and replaced when a request is recorded
	nextID    int
	closeOnce sync.Once
	cache     *promptCache

	conns atomic.Int64 // TCP connections accepted
}

// New starts a server on 127.0.0.1:0, closed by t.Cleanup.
func New(t testing.TB) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts a server on 127.0.0.1:0 outside a test (make demo's
// stand-in for a model); the caller closes it.
func Start() *Server {
	s := &Server{changed: make(chan struct{}), cache: newPromptCache()}
	s.closed, s.endClosed = context.WithCancel(context.Background())
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	return s
}

// URL is the base URL including "/v1", for llm.Config.BaseURL.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Connections is the number of TCP connections the server has accepted:
// a client that keeps its connections alive opens few.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Close stops the server: later requests fail to connect, pending delays
// end. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.endClosed()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Push appends replies to the queue; each request takes the first.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// SetResponder sets the answer for requests that find the queue empty;
// nil restores the default, Text("ok").
func (s *Server) SetResponder(f func(Request) Reply) {
	s.mu.Lock()
	s.responder = f
	s.mu.Unlock()
}

// Pending is the number of queued replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every chat request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// WaitRequests waits until at least n chat requests have been received and
// returns them all, or returns ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		got, changed := len(s.requests), s.changed
		s.mu.Unlock()
		if got >= n {
			return s.Requests(), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d requests (have %d): %w", n, got, ctx.Err())
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.chat(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, http.StatusOK, map[string]any{
			"object": "list",
			"data": []map[string]any{
				{"id": "llmtest-model", "object": "model", "created": 0, "owned_by": "llmtest"},
			},
		})
	default:
		writeJSON(w, http.StatusNotFound, errorBody(http.StatusNotFound))
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	req, problem := decodeRequest(body)
	req.Header = r.Header.Clone()
	req.Body = body
	req.Received = time.Now()
	if problem != nil {
		req.Problem = problem.Error()
	} else {
		req.PromptTokens, req.CachedTokens = s.cache.observe(body)
	}

	// Recording and taking the queue's head under one lock keeps request i
	// paired with reply i.
	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var reply Reply
	queued := problem == nil && len(s.queue) > 0
	if queued {
		reply = s.queue[0]
		s.queue = s.queue[1:]
	}
	responder := s.responder
	s.mu.Unlock()

	if problem != nil {
		eb := errorBody(http.StatusBadRequest)
		eb["error"].(map[string]any)["message"] = BodyMarker + ": " + req.Problem
		writeJSON(w, http.StatusBadRequest, eb)
		return
	}
	if !queued {
		reply = Text("ok")
		if responder != nil {
			// Called without the lock, so a responder may call Requests.
			reply = responder(req)
		}
	}
	reply = s.prepare(req, reply)
	if !s.pause(r.Context(), reply.Delay) {
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.Body)
	case status != http.StatusOK:
		writeJSON(w, status, errorBody(status))
	case req.Stream:
		s.stream(w, r, req, reply)
	default:
		writeJSON(w, http.StatusOK, s.completion(req, reply))
	}
}

// prepare fills missing tool-call ids, unique per server, and the model
// name.
func (s *Server) prepare(req Request, reply Reply) Reply {
	if len(reply.ToolCalls) > 0 {
		s.mu.Lock()
		s.nextID++
		n := s.nextID
		s.mu.Unlock()
		calls := make([]llm.ToolCall, len(reply.ToolCalls))
		copy(calls, reply.ToolCalls)
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i+1)
			}
		}
		reply.ToolCalls = calls
	}
	if reply.Model == "" {
		reply.Model = req.Model
	}
	return reply
}

// pause waits d; false means the client left or the server closed.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closed, cancel)()
	return backoff.Sleep(ctx, d) == nil
}

func (s *Server) completion(req Request, reply Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	if len(reply.ToolCalls) > 0 {
		if reply.Text == "" {
			msg["content"] = nil // as OpenAI sends it
		}
		msg["tool_calls"] = wireCalls(reply.ToolCalls)
	}
	return map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   reply.Model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       msg,
			"finish_reason": finishReason(reply),
		}},
		"usage": s.usage(req, reply),
	}
}

// stream writes reply as server-sent events the way OpenAI does: a role
// chunk, content chunks, tool-call chunks (id and name first, then the
// arguments in two pieces), a finish chunk, a usage chunk when asked for,
// and "data: [DONE]".
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("llmtest: encode chunk: %v", err))
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk",
			"created": time.Now().Unix(), "model": reply.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}

	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for i, frag := range fragments(reply) {
		if reply.CutAfter > 0 && i == reply.CutAfter {
			panic(http.ErrAbortHandler) // drops the connection mid-stream
		}
		if i > 0 && !s.pause(r.Context(), reply.FragmentDelay) {
			return
		}
		if !send(chunk(map[string]any{"content": frag}, nil)) {
			return
		}
	}
	for i, tc := range reply.ToolCalls {
		head := map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		half := len(tc.Arguments) / 2
		for _, part := range []string{tc.Arguments[:half], tc.Arguments[half:]} {
			d := map[string]any{"index": i, "function": map[string]any{"arguments": part}}
			if !send(chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
				return
			}
		}
	}
	if !send(chunk(map[string]any{}, finishReason(reply))) {
		return
	}
	if req.IncludeUsage {
		u := map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk",
			"created": time.Now().Unix(), "model": reply.Model,
			"choices": []any{}, "usage": s.usage(req, reply),
		}
		if !send(u) {
			return
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

func fragments(reply Reply) []string {
	if len(reply.Fragments) > 0 {
		return reply.Fragments
	}
	if reply.Text == "" {
		return nil
	}
	var out []string
	rest := reply.Text
	for {
		i := strings.IndexByte(rest[1:], ' ')
		if i < 0 {
			return append(out, rest)
		}
		out = append(out, rest[:i+1])
		rest = rest[i+1:]
	}
}

func wireCalls(calls []llm.ToolCall) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, tc := range calls {
		out[i] = map[string]any{
			"id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
		}
	}
	return out
}

func finishReason(reply Reply) any {
	switch {
	case reply.FinishReason == "-":
		return nil
	case reply.FinishReason != "":
		return reply.FinishReason
	case len(reply.ToolCalls) > 0:
		return llm.FinishToolCalls
	default:
		return llm.FinishStop
	}
}

func (s *Server) usage(req Request, reply Reply) map[string]any {
	u := llm.Usage{PromptTokens: req.PromptTokens, CachedTokens: req.CachedTokens}
	if reply.Usage != nil {
		u = *reply.Usage
	} else {
		n := s.cache.count(reply.Text)
		for _, tc := range reply.ToolCalls {
			n += s.cache.count(tc.Name) + s.cache.count(tc.Arguments)
		}
		u.CompletionTokens = n
	}
	return map[string]any{
		"prompt_tokens":         u.PromptTokens,
		"completion_tokens":     u.CompletionTokens,
		"total_tokens":          u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details": map[string]int{"cached_tokens": u.CachedTokens},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode reply: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
