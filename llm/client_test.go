package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

const testKey = "sk-test-SECRET-key-0123456789"

func newClient(t testing.TB, baseURL string, mod func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{
		BaseURL:     baseURL,
		APIKey:      testKey,
		Model:       "test-model",
		Temperature: 0.2,
		Timeout:     10 * time.Second,
		BaseDelay:   time.Millisecond,
		MaxDelay:    10 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	return llm.New(cfg)
}

func userReq(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are terse."},
		{Role: llm.RoleUser, Content: text},
	}}
}

// collector gathers streamed fragments.
type collector struct{ frags []string }

func (c *collector) add(s string) { c.frags = append(c.frags, s) }

func mustValid(t *testing.T, reqs []llmtest.Request) {
	t.Helper()
	for i, r := range reqs {
		if r.Problem != "" {
			t.Fatalf("request %d refused by the fake: %s", i, r.Problem)
		}
	}
}

func TestChatReplies(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		reply     llmtest.Reply
		wantText  string
		wantFrags []string
		wantCalls []llm.ToolCall
		wantFin   string
	}{
		{
			name:     "text",
			reply:    llmtest.Text("Hello there, world"),
			wantText: "Hello there, world",
			wantFin:  llm.FinishStop,
		},
		{
			name:      "streamed text",
			stream:    true,
			reply:     llmtest.Text("Hello there, world"),
			wantText:  "Hello there, world",
			wantFrags: []string{"Hello", " there,", " world"},
			wantFin:   llm.FinishStop,
		},
		{
			name:      "tool call",
			reply:     llmtest.ToolCall("get_time", `{"tz":"UTC"}`),
			wantCalls: []llm.ToolCall{{ID: "call_1_1", Name: "get_time", Arguments: `{"tz":"UTC"}`}},
			wantFin:   llm.FinishToolCalls,
		},
		{
			name:   "streamed tool calls with text",
			stream: true,
			reply: llmtest.Reply{Text: "Checking.", ToolCalls: []llm.ToolCall{
				{Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				{ID: "call_fixed", Name: "read_file", Arguments: `{"path":"USER.md"}`},
			}},
			wantText:  "Checking.",
			wantFrags: []string{"Checking."},
			wantCalls: []llm.ToolCall{
				{ID: "call_1_1", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				{ID: "call_fixed", Name: "read_file", Arguments: `{"path":"USER.md"}`},
			},
			wantFin: llm.FinishToolCalls,
		},
		{
			name:     "length cut",
			reply:    llmtest.Reply{Text: "Partial", FinishReason: llm.FinishLength},
			wantText: "Partial",
			wantFin:  llm.FinishLength,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.reply)
			c := newClient(t, srv.URL(), nil)
			req := userReq("what time is it?")
			var col collector
			if tc.stream {
				req.OnDelta = col.add
			}
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Content != tc.wantText {
				t.Errorf("Content = %q, want %q", resp.Content, tc.wantText)
			}
			if !slices.Equal(col.frags, tc.wantFrags) {
				t.Errorf("fragments = %q, want %q", col.frags, tc.wantFrags)
			}
			if !slices.Equal(resp.ToolCalls, tc.wantCalls) {
				t.Errorf("ToolCalls = %+v, want %+v", resp.ToolCalls, tc.wantCalls)
			}
			if resp.FinishReason != tc.wantFin {
				t.Errorf("FinishReason = %q, want %q", resp.FinishReason, tc.wantFin)
			}
			if resp.Model != "test-model" {
				t.Errorf("Model = %q", resp.Model)
			}
			if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens <= 0 {
				t.Errorf("Usage = %+v, want both counts > 0", resp.Usage)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			mustValid(t, reqs)
			r := reqs[0]
			if r.Stream != tc.stream || r.IncludeUsage != tc.stream {
				t.Errorf("stream = %v, include_usage = %v; want %v", r.Stream, r.IncludeUsage, tc.stream)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization = %q", got)
			}
			if r.Model != "test-model" || len(r.Messages) != 2 || r.Messages[1].Content != "what time is it?" {
				t.Errorf("request = %+v", r)
			}
		})
	}
}

func TestToolRoundTrip(t *testing.T) {
	schema, err := os.ReadFile("testdata/get_time.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.ToolDef{
		{Name: "get_time", Description: "Current time in a zone", Parameters: schema},
		{Name: "noop", Description: "Takes nothing"},
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "streamed"}[stream], func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(
				llmtest.Reply{ToolCalls: []llm.ToolCall{
					{Name: "get_time", Arguments: `{"tz":"UTC"}`},
					{Name: "noop", Arguments: ""},
				}},
				llmtest.Text("It is 12:00 UTC."),
			)
			c := newClient(t, srv.URL(), nil)
			var col collector
			req := userReq("time?")
			req.Tools = tools
			if stream {
				req.OnDelta = col.add
			}

			first, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatalf("first Chat: %v", err)
			}
			if len(first.ToolCalls) != 2 || first.ToolCalls[0].ID == first.ToolCalls[1].ID {
				t.Fatalf("ToolCalls = %+v, want two with distinct ids", first.ToolCalls)
			}
			when := time.Date(2026, 4, 3, 0, 2, 0, 0, time.UTC)
			req.Messages = append(req.Messages,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: first.ToolCalls, Time: when},
				llm.Message{Role: llm.RoleTool, ToolCallID: first.ToolCalls[0].ID, Name: "get_time", Content: "12:00", Time: when},
				llm.Message{Role: llm.RoleTool, ToolCallID: first.ToolCalls[1].ID, Name: "noop", Content: "", Time: when},
			)
			second, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatalf("second Chat: %v", err)
			}
			if second.Content != "It is 12:00 UTC." {
				t.Errorf("second Content = %q", second.Content)
			}

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("server saw %d requests", len(reqs))
			}
			mustValid(t, reqs)
			r := reqs[1]
			if err := r.CheckToolPairs(); err != nil {
				t.Errorf("CheckToolPairs: %v", err)
			}
			asst, res0, res1 := r.Messages[2], r.Messages[3], r.Messages[4]
			if !slices.Equal(asst.ToolCalls, []llm.ToolCall{
				{ID: first.ToolCalls[0].ID, Name: "get_time", Arguments: `{"tz":"UTC"}`},
				{ID: first.ToolCalls[1].ID, Name: "noop", Arguments: "{}"},
			}) {
				t.Errorf("assistant tool calls on the wire = %+v", asst.ToolCalls)
			}
			if res0.ToolCallID != first.ToolCalls[0].ID || res0.Name != "get_time" || res0.Content != "12:00" {
				t.Errorf("tool result = %+v", res0)
			}
			if res1.ToolCallID != first.ToolCalls[1].ID || res1.Content != "" {
				t.Errorf("empty tool result = %+v", res1)
			}
			if bytes.Contains(r.Body, []byte("timestamp")) || bytes.Contains(r.Body, []byte("2026-04-03")) {
				t.Errorf("Message.Time was sent: %s", r.Body)
			}
			if !slices.Equal(r.Tools, []string{"get_time", "noop"}) {
				t.Errorf("tools = %q", r.Tools)
			}
			var body struct {
				Messages []map[string]json.RawMessage `json:"messages"`
				Tools    []struct {
					Function struct {
						Parameters json.RawMessage `json:"parameters"`
					} `json:"function"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if got := string(body.Messages[2]["content"]); got != `""` {
				t.Errorf("assistant tool-call content on the wire = %s, want \"\"", got)
			}
			var want, got bytes.Buffer
			_ = json.Compact(&want, schema)
			_ = json.Compact(&got, body.Tools[0].Function.Parameters)
			if want.String() != got.String() {
				t.Errorf("schema changed on the wire:\n got %s\nwant %s", &got, &want)
			}
			if string(body.Tools[1].Function.Parameters) != `{"type":"object","properties":{}}` {
				t.Errorf("empty schema sent as %s", body.Tools[1].Function.Parameters)
			}
		})
	}
}

func TestRetriesThenSuccess(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		replies  []llmtest.Reply
		mod      func(*llm.Config)
		wantReqs int
		minGap   time.Duration // between the first two requests
	}{
		{
			name:     "429 with Retry-After 1",
			replies:  []llmtest.Reply{llmtest.Status(429, "1"), llmtest.Text("ok")},
			mod:      func(c *llm.Config) { c.MaxDelay = 5 * time.Second },
			wantReqs: 2,
			minGap:   time.Second,
		},
		{
			name:     "500 twice",
			replies:  []llmtest.Reply{llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Text("ok")},
			wantReqs: 3,
		},
		{
			name:     "502 with an HTML body",
			replies:  []llmtest.Reply{{Status: 502, Body: "<html>" + llmtest.BodyMarker + "</html>"}, llmtest.Text("ok")},
			wantReqs: 2,
		},
		{
			name:     "timeout then answer",
			replies:  []llmtest.Reply{llmtest.Slow(time.Minute, llmtest.Text("late")), llmtest.Text("ok")},
			mod:      func(c *llm.Config) { c.Timeout = 500 * time.Millisecond },
			wantReqs: 2,
		},
		{
			name:     "streamed 503 then answer",
			stream:   true,
			replies:  []llmtest.Reply{llmtest.Status(503, ""), llmtest.Text("ok")},
			wantReqs: 2,
		},
		{
			name:     "stream ends without finish before any fragment",
			stream:   true,
			replies:  []llmtest.Reply{{FinishReason: "-"}, llmtest.Text("ok")},
			wantReqs: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			c := newClient(t, srv.URL(), tc.mod)
			req := userReq("hi")
			var col collector
			if tc.stream {
				req.OnDelta = col.add
			}
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Content != "ok" {
				t.Errorf("Content = %q", resp.Content)
			}
			if tc.stream && !slices.Equal(col.frags, []string{"ok"}) {
				t.Errorf("fragments = %q, want exactly one \"ok\"", col.frags)
			}
			if n := requestCount(t, srv, tc.wantReqs); n != tc.wantReqs {
				t.Fatalf("server saw %d requests, want %d", n, tc.wantReqs)
			}
			reqs := srv.Requests()
			mustValid(t, reqs)
			if gap := reqs[1].Received.Sub(reqs[0].Received); gap < tc.minGap {
				t.Errorf("retry came %v after the first try, want >= %v", gap, tc.minGap)
			}
			if u := c.Usage()[llm.PurposeChat]; u.Calls != 1 {
				t.Errorf("usage calls = %d, want 1 (tries are not calls)", u.Calls)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name       string
		stream     bool
		replies    []llmtest.Reply
		responder  llmtest.Reply // for every request once replies run out
		mod        func(*llm.Config)
		wantKind   error
		wantStatus int
		wantReason string
		wantReqs   int
		wantFrags  int
	}{
		{
			name:       "400 is rejected at once",
			replies:    []llmtest.Reply{llmtest.Status(400, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 400,
			wantReason: "HTTP 400",
			wantReqs:   1,
		},
		{
			name:       "401 names the code",
			replies:    []llmtest.Reply{llmtest.Status(401, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 401,
			wantReason: "HTTP 401 (invalid_api_key)",
			wantReqs:   1,
		},
		{
			name:       "streamed 400",
			stream:     true,
			replies:    []llmtest.Reply{llmtest.Status(400, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 400,
			wantReason: "HTTP 400",
			wantReqs:   1,
		},
		{
			name:       "503 on every try",
			responder:  llmtest.Status(503, ""),
			wantKind:   llm.ErrUnavailable,
			wantStatus: 503,
			wantReason: "HTTP 503 after 5 tries",
			wantReqs:   5,
		},
		{
			name:       "429 on every try",
			responder:  llmtest.Status(429, ""),
			mod:        func(c *llm.Config) { c.MaxTries = 3 },
			wantKind:   llm.ErrUnavailable,
			wantStatus: 429,
			wantReason: "rate limited (HTTP 429) after 3 tries",
			wantReqs:   3,
		},
		{
			name:       "garbage body",
			replies:    []llmtest.Reply{llmtest.Malformed()},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "not a chat completion",
			wantReqs:   1,
		},
		{
			name:       "no choices",
			replies:    []llmtest.Reply{{Body: `{"id":"x","object":"chat.completion","choices":[]}`}},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no choices",
			wantReqs:   1,
		},
		{
			name:       "error object with status 200",
			replies:    []llmtest.Reply{{Body: `{"error":{"message":"` + llmtest.BodyMarker + `"}}`}},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no choices",
			wantReqs:   1,
		},
		{
			name:       "streamed garbage",
			stream:     true,
			replies:    []llmtest.Reply{llmtest.Malformed()},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no completion",
			wantReqs:   1,
		},
		{
			name:       "slow beyond the timeout on every try",
			responder:  llmtest.Slow(time.Minute, llmtest.Text("late")),
			mod:        func(c *llm.Config) { c.Timeout = 300 * time.Millisecond; c.MaxTries = 2 },
			wantKind:   llm.ErrUnavailable,
			wantReason: "timed out after 300ms",
			wantReqs:   2,
		},
		{
			name:       "stream broken after a fragment is not retried",
			stream:     true,
			replies:    []llmtest.Reply{{Text: "one two three", CutAfter: 1}},
			wantKind:   llm.ErrUnavailable,
			wantStatus: 200,
			wantReason: "the answer broke off mid-stream",
			wantReqs:   1,
			wantFrags:  1,
		},
		{
			name:   "stream stalled after a fragment times out",
			stream: true,
			replies: []llmtest.Reply{{
				Fragments: []string{"one", " two"}, FragmentDelay: time.Minute,
			}},
			mod:        func(c *llm.Config) { c.Timeout = 400 * time.Millisecond },
			wantKind:   llm.ErrUnavailable,
			wantStatus: 200,
			wantReason: "timed out after 400ms",
			wantReqs:   1,
			wantFrags:  1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			resp := tc.responder
			srv.SetResponder(func(llmtest.Request) llmtest.Reply { return resp })
			c := newClient(t, srv.URL(), tc.mod)
			req := userReq("hi")
			var col collector
			if tc.stream {
				req.OnDelta = col.add
			}
			_, err := c.Chat(t.Context(), req)
			checkError(t, err, tc.wantKind, tc.wantStatus, tc.wantReason)
			if n := requestCount(t, srv, tc.wantReqs); n != tc.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tc.wantReqs)
			}
			if len(col.frags) != tc.wantFrags {
				t.Errorf("fragments = %q, want %d", col.frags, tc.wantFrags)
			}
			if u := c.Usage(); len(u) != 0 {
				t.Errorf("failed call recorded usage: %+v", u)
			}
		})
	}
}

// requestCount is the number of requests the server recorded, after
// waiting a while for want of them: a request the client gave up on at its
// timeout may be recorded a moment after Chat returned.
func requestCount(t *testing.T, srv *llmtest.Server, want int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, _ = srv.WaitRequests(ctx, want)
	return len(srv.Requests())
}

// checkError asserts the error's kind, status and reason, and that neither
// the Reason nor the user's sentence carries a provider body or the key.
func checkError(t *testing.T, err error, kind error, status int, reason string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("err %T is not *llm.Error", err)
	}
	if status != 0 && le.Status != status {
		t.Errorf("Status = %d, want %d", le.Status, status)
	}
	if !strings.Contains(le.Reason, reason) {
		t.Errorf("Reason = %q, want it to contain %q", le.Reason, reason)
	}
	msg := llm.UserMessage(err)
	for _, s := range []string{le.Reason, msg} {
		if strings.Contains(s, llmtest.BodyMarker) || strings.Contains(s, testKey) {
			t.Errorf("user-facing text leaks a body or the key: %q", s)
		}
	}
	if strings.Count(msg, ".") < 1 || strings.Contains(msg, "\n") {
		t.Errorf("UserMessage = %q, want one sentence", msg)
	}
	t.Logf("UserMessage: %s", msg)
}

// deadURL returns a base URL on a port where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
}

func TestEndpointDown(t *testing.T) {
	t.Run("closed listener", func(t *testing.T) {
		base := deadURL(t)
		c := newClient(t, base, func(c *llm.Config) { c.MaxTries = 2 })
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "cannot connect to "+base)
		if got, want := llm.UserMessage(err), "The model is unavailable: cannot connect to "+base+"; check that its server is running and that llm.baseURL is right."; got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
		if err := c.Ping(t.Context()); !errors.Is(err, llm.ErrUnavailable) {
			t.Errorf("Ping = %v, want ErrUnavailable", err)
		}
	})
	t.Run("refused connection is not retried", func(t *testing.T) {
		// With an hour between tries, a retry would end in the deadline.
		c := newClient(t, deadURL(t), func(c *llm.Config) { c.MaxTries, c.BaseDelay = 5, time.Hour })
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := c.Chat(ctx, userReq("hi"))
		if !errors.Is(err, llm.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrUnavailable at once", err)
		}
		if !strings.Contains(err.Error(), "1 try") {
			t.Errorf("err = %v, want a single try", err)
		}
	})
	t.Run("credentials stay out of the reason", func(t *testing.T) {
		// The user name, the password and the query each hold a secret
		// that is not the API key (which is redacted on its own), and the
		// error chain quotes the request URL (net/http hides only the
		// password, as "***").
		const user, pass, query = "tokenuser-0451", "pass-word-0452", "query-token-0453"
		base := strings.Replace(deadURL(t), "http://", "http://"+user+":"+pass+"@", 1) + "?key=" + query
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := newClient(t, base, func(c *llm.Config) { c.MaxTries, c.Logger = 1, log })
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "cannot connect to http://[redacted]@127.0.0.1:")
		perr := c.Ping(t.Context())
		log.Error("turn failed", "err", err, "ping", perr) // as the gateway logs them
		for name, s := range map[string]string{
			"error": err.Error(), "ping": perr.Error(), "user message": llm.UserMessage(err), "log": logs.String(),
		} {
			for _, secret := range []string{user, pass, query} {
				if strings.Contains(s, secret) {
					t.Errorf("%s holds %q: %s", name, secret, s)
				}
			}
		}
	})
	t.Run("server closed mid-test", func(t *testing.T) {
		srv := llmtest.New(t)
		c := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxTries = 2 })
		if _, err := c.Chat(t.Context(), userReq("hi")); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "")
	})
}

func TestPing(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(t, srv.URL(), nil)
	if err := c.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	wrong := newClient(t, srv.URL()+"/nope", nil)
	err := wrong.Ping(t.Context())
	checkError(t, err, llm.ErrRejected, 404, "HTTP 404")
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		// With hour-long delays, only a cancellation that cuts the wait
		// lets Chat return before the test's own deadline.
		{name: "during backoff", reply: llmtest.Status(500, "")},
		{name: "during Retry-After", reply: llmtest.Status(429, "3600")},
		{name: "during a slow answer", reply: llmtest.Slow(time.Hour, llmtest.Text("late"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.reply)
			c := newClient(t, srv.URL(), func(c *llm.Config) {
				c.BaseDelay, c.MaxDelay, c.Timeout = time.Hour, time.Hour, time.Hour
			})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := c.Chat(ctx, userReq("hi"))
				done <- err
			}()
			if _, err := srv.WaitRequests(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			cancel()
			err := <-done
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if got := llm.UserMessage(err); got != "The request was cancelled." {
				t.Errorf("UserMessage = %q", got)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestBreaker(t *testing.T) {
	srv := llmtest.New(t)
	clock := testkit.NewClock(time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC))
	c := newClient(t, srv.URL(), func(c *llm.Config) {
		c.MaxTries = 1
		c.BreakerThreshold = 2
		c.BreakerCooldown = 30 * time.Second
	})
	llm.SetClock(c, clock.Now)
	ctx := t.Context()

	step := func(name string, wantErr error, wantReason string, wantReqs int) {
		t.Helper()
		_, err := c.Chat(ctx, userReq("hi"))
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%s: Chat: %v", name, err)
		case wantErr != nil:
			checkError(t, err, wantErr, 0, wantReason)
		}
		if n := len(srv.Requests()); n != wantReqs {
			t.Fatalf("%s: server saw %d requests, want %d", name, n, wantReqs)
		}
	}

	srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
	step("first failure", llm.ErrUnavailable, "HTTP 503", 1)
	step("second failure opens", llm.ErrUnavailable, "HTTP 503", 2)
	step("open fails fast", llm.ErrUnavailable, "HTTP 503 after 1 try (too many failures in a row; next try in 30s)", 2)
	clock.Advance(20 * time.Second)
	step("still open", llm.ErrUnavailable, "next try in 10s", 2)

	clock.Advance(11 * time.Second)
	step("failed trial re-opens", llm.ErrUnavailable, "HTTP 503", 3)
	// The cooldown doubles at each one in a row, as chains pass it over.
	step("re-opened for twice as long", llm.ErrUnavailable, "next try in 60s", 3)

	// A trial in flight: others fail fast; an abandoned trial decides nothing.
	clock.Advance(61 * time.Second)
	srv.Push(llmtest.Slow(time.Hour, llmtest.Text("late")))
	trialCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat(trialCtx, userReq("hi"))
		done <- err
	}()
	if _, err := srv.WaitRequests(ctx, 4); err != nil {
		t.Fatal(err)
	}
	step("during the trial", llm.ErrUnavailable, "a trial call is under way", 4)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned trial: %v", err)
	}

	srv.SetResponder(nil) // Text("ok")
	step("successful trial closes", nil, "", 5)
	step("closed", nil, "", 6)

	// Rejections reach the server: they neither count nor keep a run going.
	srv.Push(llmtest.Status(503, ""), llmtest.Status(400, ""), llmtest.Status(503, ""))
	step("503", llm.ErrUnavailable, "HTTP 503", 7)
	step("400", llm.ErrRejected, "HTTP 400", 8)
	step("503 again", llm.ErrUnavailable, "HTTP 503", 9)
	step("still closed", nil, "", 10)
}

func TestBackoffWaits(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		replies []llmtest.Reply
		want    []time.Duration
	}{
		{
			name:    "doubling up to MaxDelay",
			replies: []llmtest.Reply{llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Status(500, "")},
			want:    []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second},
		},
		{
			name:    "Retry-After capped at MaxDelay",
			replies: []llmtest.Reply{llmtest.Status(429, "3600")},
			want:    []time.Duration{5 * time.Second},
		},
		{
			name:    "Retry-After as an HTTP date",
			replies: []llmtest.Reply{llmtest.Status(503, now.Add(3*time.Second).Format(http.TimeFormat))},
			want:    []time.Duration{3 * time.Second},
		},
		{
			name:    "unreadable Retry-After falls back to backoff",
			replies: []llmtest.Reply{llmtest.Status(429, "soon")},
			want:    []time.Duration{time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			c := newClient(t, srv.URL(), func(c *llm.Config) {
				c.BaseDelay, c.MaxDelay = time.Second, 5*time.Second
			})
			llm.SetClock(c, func() time.Time { return now })
			var waits []time.Duration
			llm.SetWait(c, func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			})
			if _, err := c.Chat(t.Context(), userReq("hi")); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !slices.Equal(waits, tc.want) {
				t.Errorf("waits = %v, want %v", waits, tc.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		v, ms  string
		want   time.Duration
		wantOK bool
	}{
		{v: "1", want: time.Second, wantOK: true},
		{v: "0", want: 0, wantOK: true},
		{v: "120", want: 2 * time.Minute, wantOK: true},
		{v: "-3"},
		{v: "1.5"},
		{v: "soon"},
		{},
		{v: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{v: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{v: "99999999999999", want: 24 * time.Hour, wantOK: true},
		{v: "20", ms: "250", want: 250 * time.Millisecond, wantOK: true},
		{ms: "1500.5", want: 1500500 * time.Microsecond, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.v+"/"+tc.ms, func(t *testing.T) {
			got, ok := llm.ParseRetryAfter(tc.v, tc.ms, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ParseRetryAfter(%q, %q) = %v, %v; want %v, %v", tc.v, tc.ms, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestUsagePerPurpose(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxTries = 1 })
	calls := []struct {
		purpose string
		reply   llmtest.Reply
	}{
		{"", llmtest.Reply{Text: "a", Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 1}}},
		{llm.PurposeChat, llmtest.Reply{Text: "b", Usage: &llm.Usage{PromptTokens: 20, CompletionTokens: 2}}},
		{llm.PurposeArchive, llmtest.Reply{Text: "c", Usage: &llm.Usage{PromptTokens: 300, CompletionTokens: 30}}},
		{llm.PurposeDreamAnalysis, llmtest.Reply{Text: "d", Usage: &llm.Usage{PromptTokens: 4000, CompletionTokens: 400}}},
		{llm.PurposeDreamEdit, llmtest.Status(400, "")}, // failed: not counted
	}
	for _, call := range calls {
		srv.Push(call.reply)
		req := userReq("x")
		req.Purpose = call.purpose
		resp, err := c.Chat(t.Context(), req)
		// A completed call's own Usage counts it, so callers summing
		// Response.Usage (the agent loop, Dream) get the calls right.
		if err == nil && (resp.Usage.Calls != 1 || resp.Usage.PromptTokens != call.reply.Usage.PromptTokens) {
			t.Errorf("purpose %q: Response.Usage = %+v, want %+v with Calls 1", call.purpose, resp.Usage, *call.reply.Usage)
		}
	}
	want := map[string]llm.Usage{
		llm.PurposeChat:          {PromptTokens: 30, CompletionTokens: 3, Calls: 2},
		llm.PurposeArchive:       {PromptTokens: 300, CompletionTokens: 30, Calls: 1},
		llm.PurposeDreamAnalysis: {PromptTokens: 4000, CompletionTokens: 400, Calls: 1},
	}
	got := c.Usage()
	if len(got) != len(want) {
		t.Errorf("Usage = %+v, want %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("Usage[%q] = %+v, want %+v", k, got[k], w)
		}
	}
	got[llm.PurposeChat] = llm.Usage{}
	if c.Usage()[llm.PurposeChat].Calls != 2 {
		t.Error("Usage returned a map shared with the client")
	}
}

func TestConcurrentCalls(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: "re: " + r.Messages[len(r.Messages)-1].Content, Usage: &llm.Usage{PromptTokens: 3, CompletionTokens: 2}}
	})
	c := newClient(t, srv.URL(), nil)
	purposes := []string{llm.PurposeChat, llm.PurposeArchive, llm.PurposeDreamEdit, llm.PurposeDreamAnalysis}
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				text := string(rune('a'+w)) + string(rune('0'+i))
				req := userReq(text)
				req.Purpose = purposes[(w+i)%len(purposes)]
				var col collector
				if i%2 == 0 {
					req.OnDelta = col.add
				}
				resp, err := c.Chat(t.Context(), req)
				switch {
				case err != nil:
					errs <- err
				case resp.Content != "re: "+text:
					errs <- errors.New("answer " + resp.Content + " for " + text)
				}
				_ = c.Usage()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total llm.Usage
	for _, u := range c.Usage() {
		total = total.Add(u)
	}
	if want := (llm.Usage{PromptTokens: 3 * workers * each, CompletionTokens: 2 * workers * each, Calls: workers * each}); total != want {
		t.Errorf("total usage = %+v, want %+v", total, want)
	}
	if n := len(srv.Requests()); n != workers*each {
		t.Errorf("server saw %d requests", n)
	}
}

func TestWireParameters(t *testing.T) {
	tests := []struct {
		name      string
		mod       func(*llm.Config)
		req       func(*llm.Request)
		wantModel string
		wantMax   int
		check     func(t *testing.T, r llmtest.Request, body map[string]json.RawMessage)
	}{
		{
			name:      "defaults",
			mod:       func(c *llm.Config) { c.MaxTokens = 100 },
			wantModel: "test-model",
			wantMax:   100,
			check: func(t *testing.T, r llmtest.Request, _ map[string]json.RawMessage) {
				if r.Temperature == nil || *r.Temperature < 0.19 || *r.Temperature > 0.21 {
					t.Errorf("temperature = %v, want 0.2", r.Temperature)
				}
			},
		},
		{
			name:      "request overrides model and max tokens",
			mod:       func(c *llm.Config) { c.MaxTokens = 100 },
			req:       func(r *llm.Request) { r.Model = "cheap-model"; r.MaxTokens = 50 },
			wantModel: "cheap-model",
			wantMax:   50,
		},
		{
			name:      "temperature zero is sent",
			mod:       func(c *llm.Config) { c.Temperature = 0 },
			wantModel: "test-model",
			check: func(t *testing.T, r llmtest.Request, _ map[string]json.RawMessage) {
				if r.Temperature == nil || *r.Temperature > 1e-6 {
					t.Errorf("temperature = %v, want ~0", r.Temperature)
				}
			},
		},
		{
			name:      "negative temperature leaves the default",
			mod:       func(c *llm.Config) { c.Temperature = -1 },
			wantModel: "test-model",
			check: func(t *testing.T, r llmtest.Request, _ map[string]json.RawMessage) {
				if r.Temperature != nil {
					t.Errorf("temperature = %v, want none", *r.Temperature)
				}
			},
		},
		{
			name:      "reasoning model takes max_completion_tokens",
			mod:       func(c *llm.Config) { c.Model = "o3-mini"; c.MaxTokens = 100 },
			wantModel: "o3-mini",
			wantMax:   100,
			check: func(t *testing.T, r llmtest.Request, body map[string]json.RawMessage) {
				if _, ok := body["max_tokens"]; ok {
					t.Error("max_tokens sent to a reasoning model")
				}
				if r.Temperature != nil {
					t.Errorf("temperature %v sent to a reasoning model", *r.Temperature)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			c := newClient(t, srv.URL(), tc.mod)
			req := userReq("hi")
			if tc.req != nil {
				tc.req(&req)
			}
			if _, err := c.Chat(t.Context(), req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			r := srv.Requests()[0]
			mustValid(t, []llmtest.Request{r})
			if r.Model != tc.wantModel || r.MaxTokens != tc.wantMax {
				t.Errorf("model, max tokens = %q, %d; want %q, %d", r.Model, r.MaxTokens, tc.wantModel, tc.wantMax)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, r, body)
			}
		})
	}
}

// TestStreamIdleTimeout: for a streamed answer the timeout bounds each wait
// for the next chunk, not the whole answer.
func TestStreamIdleTimeout(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Reply{
		Fragments:     []string{"a", "b", "c", "d", "e", "f"},
		FragmentDelay: 120 * time.Millisecond, // 600ms in all
	})
	c := newClient(t, srv.URL(), func(c *llm.Config) { c.Timeout = 450 * time.Millisecond })
	req := userReq("hi")
	var col collector
	req.OnDelta = col.add
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Content != "abcdef" || len(col.frags) != 6 {
		t.Errorf("Content = %q, fragments = %q", resp.Content, col.frags)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestRequestRefusedBeforeSending(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(t, srv.URL(), nil)
	req := userReq("hi")
	req.Tools = []llm.ToolDef{{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}
	_, err := c.Chat(t.Context(), req)
	checkError(t, err, llm.ErrRejected, 0, "could not be encoded")
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestFillEmptyContent(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a"}],"stream":false}`
	out, err := llm.FillEmptyContent([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model    string                       `json:"model"`
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{`"hi"`, `""`, `""`}
	for i, m := range got.Messages {
		if string(m["content"]) != want[i] {
			t.Errorf("messages[%d].content = %s, want %s", i, m["content"], want[i])
		}
	}
	if got.Model != "m" || string(got.Messages[1]["tool_calls"]) == "" {
		t.Errorf("other fields lost: %s", out)
	}
}

// TestLogsCarryNoText checks the debug log: counts and status, never the
// message text, the answer or the key.
func TestLogsCarryNoText(t *testing.T) {
	var buf testkit.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("SECRET-ANSWER"), llmtest.Status(400, ""))
	c := newClient(t, srv.URL(), func(c *llm.Config) { c.Logger = log })
	_, _ = c.Chat(t.Context(), userReq("SECRET-QUESTION"))
	_, _ = c.Chat(t.Context(), userReq("SECRET-QUESTION"))
	out := buf.String()
	for _, s := range []string{"SECRET-ANSWER", "SECRET-QUESTION", testKey, llmtest.BodyMarker} {
		if strings.Contains(out, s) {
			t.Errorf("log contains %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"prompt_tokens=", "completion_tokens=", "attempt=1", "status=400", "purpose=chat"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
}

func TestUserMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&llm.Error{Kind: llm.ErrUnavailable, Reason: "HTTP 503 after 5 tries"}, "The model is unavailable: HTTP 503 after 5 tries."},
		{&llm.Error{Kind: llm.ErrRejected, Status: 400}, "The model rejected the request (HTTP 400); check the model name and settings."},
		{&llm.Error{Kind: llm.ErrRejected, Status: 401}, "The model provider refused the API key (HTTP 401); check llm.apiKey."},
		{&llm.Error{Kind: llm.ErrRejected, Status: 404}, "The model or endpoint was not found (HTTP 404); check llm.model and llm.baseURL."},
		{&llm.Error{Kind: llm.ErrMalformed}, "The model returned a response that could not be read."},
		{context.Canceled, "The request was cancelled."},
		{context.DeadlineExceeded, "The model did not answer in time."},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := llm.UserMessage(tc.err); got != tc.want {
				t.Errorf("UserMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

// toolConversation is a 20-turn history with tool calls: its assistant
// messages have empty content, which takes the body-mending path.
func toolConversation() llm.Request {
	req := userReq("start")
	for i := range 5 {
		id := "call_" + string(rune('a'+i))
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"memory/MEMORY.md"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "read_file", Content: strings.Repeat("- a remembered fact\n", 40)},
			llm.Message{Role: llm.RoleAssistant, Content: "Noted."},
			llm.Message{Role: llm.RoleUser, Content: "and then?"},
		)
	}
	return req
}

func BenchmarkChat(b *testing.B) {
	cases := []struct {
		name   string
		stream bool
		req    llm.Request
	}{
		{"plain", false, userReq("hi")},
		{"streamed", true, userReq("hi")},
		{"tool-history", false, toolConversation()},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			srv := llmtest.New(b)
			srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Hello there, world") })
			c := newClient(b, srv.URL(), nil)
			req := bc.req
			if bc.stream {
				req.OnDelta = func(string) {}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Chat(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFillEmptyContent is the cost of mending one request body of the
// tool-history benchmark.
func BenchmarkFillEmptyContent(b *testing.B) {
	srv := llmtest.New(b)
	c := newClient(b, srv.URL(), nil)
	if _, err := c.Chat(b.Context(), toolConversation()); err != nil {
		b.Fatal(err)
	}
	body := srv.Requests()[0].Body
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.FillEmptyContent(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The operator's hint names the setting the caller says holds the value
// (an environment variable here), for Chat and for Ping.
func TestUserMessageNamesWhatWasSet(t *testing.T) {
	srv := llmtest.New(t)
	names := llm.Names{APIKey: "OPENAI_API_KEY", BaseURL: "OPENAI_BASE_URL", Model: "DREAMGATE_MODEL"}
	c := newClient(t, srv.URL(), func(c *llm.Config) { c.Names = names })
	srv.Push(llmtest.Status(401, ""))
	_, err := c.Chat(t.Context(), userReq("hi"))
	if got, want := llm.UserMessage(err), "The model provider refused the API key (HTTP 401); check OPENAI_API_KEY."; got != want {
		t.Errorf("Chat: UserMessage = %q, want %q", got, want)
	}
	// With no key set, a refusal is not of a key: say that none is set.
	keyless := newClient(t, srv.URL(), func(c *llm.Config) {
		c.APIKey = ""
		c.Names = llm.Names{APIKey: "OPENAI_API_KEY or llm.apiKey"}
	})
	srv.Push(llmtest.Status(401, ""))
	_, err = keyless.Chat(t.Context(), userReq("hi"))
	if got, want := llm.UserMessage(err), "The model provider wants an API key (HTTP 401), and no API key is set (OPENAI_API_KEY or llm.apiKey)."; got != want {
		t.Errorf("no key: UserMessage = %q, want %q", got, want)
	}
	wrong := newClient(t, srv.URL()+"/nope", func(c *llm.Config) { c.Names = llm.Names{Model: "OPENAI_MODEL"} })
	err = wrong.Ping(t.Context())
	if got, want := llm.UserMessage(err), "The model or endpoint was not found (HTTP 404); check OPENAI_MODEL and llm.baseURL."; got != want {
		t.Errorf("Ping: UserMessage = %q, want %q", got, want)
	}
}
