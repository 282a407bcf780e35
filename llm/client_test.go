package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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

// TestStreamIdleTimeout: for a streamed answer the timeout bounds each wait
// for the next chunk, not the whole answer.
func TestStreamIdleTimeout(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Reply{
		Fragments:     []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"},
		FragmentDelay: 200 * time.Millisecond, // 2.4 s in all, each wait far within the timeout
	})
	c := newClient(t, srv.URL(), func(c *llm.Config) { c.Timeout = 2 * time.Second })
	req := userReq("hi")
	var col collector
	req.OnDelta = col.add
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Content != "abcdefghijkl" || len(col.frags) != 12 {
		t.Errorf("Content = %q, fragments = %q", resp.Content, col.frags)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
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
