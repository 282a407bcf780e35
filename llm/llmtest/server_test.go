package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// post sends a raw chat-completions body, as any client would.
func post(t *testing.T, ctx context.Context, srv *llmtest.Server, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestWireValidation(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantOK  bool
		problem string
	}{
		{
			name:   "plain",
			body:   `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			wantOK: true,
		},
		{
			name:   "content parts",
			body:   `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
			wantOK: true,
		},
		{
			name: "assistant tool call with null content, then its result",
			body: `{"model":"m","messages":[{"role":"user","content":"t?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
			wantOK: true,
		},
		{
			name:    "user message without content",
			body:    `{"model":"m","messages":[{"role":"user"}]}`,
			problem: "missing content on a user message",
		},
		{
			name: "tool result without content",
			body: `{"model":"m","messages":[{"role":"user","content":"t?"},
				{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1"}]}`,
			problem: "missing content on a tool message",
		},
		{
			name: "arguments not a string",
			body: `{"model":"m","messages":[{"role":"user","content":"t?"},
				{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]},
				{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
			problem: "arguments must be a string",
		},
		{
			name: "arguments missing",
			body: `{"model":"m","messages":[{"role":"user","content":"t?"},
				{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}]},
				{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
			problem: "arguments must be a string",
		},
		{
			name:    "missing model",
			body:    `{"messages":[{"role":"user","content":"hi"}]}`,
			problem: "model",
		},
		{
			name:    "no messages",
			body:    `{"model":"m","messages":[]}`,
			problem: "non-empty",
		},
		{
			name:    "stream_options without stream",
			body:    `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`,
			problem: "stream_options",
		},
		{
			name:    "tool with null parameters",
			body:    `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":null}}]}`,
			problem: "parameters",
		},
		{
			name:    "unknown role",
			body:    `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`,
			problem: "unknown role",
		},
		{
			name:    "not JSON",
			body:    `hello`,
			problem: "not a JSON object",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(llmtest.Text("scripted"))
			resp, body := post(t, t.Context(), srv, tc.body)
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("recorded %d requests", len(reqs))
			}
			if tc.wantOK {
				if resp.StatusCode != 200 || reqs[0].Problem != "" {
					t.Fatalf("status %d, problem %q: %s", resp.StatusCode, reqs[0].Problem, body)
				}
				return
			}
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
			}
			if !strings.Contains(reqs[0].Problem, tc.problem) {
				t.Errorf("Problem = %q, want it to mention %q", reqs[0].Problem, tc.problem)
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "invalid_request_error" {
				t.Errorf("error body not in OpenAI's shape: %s", body)
			}
			if srv.Pending() != 1 {
				t.Error("a refused request used up a scripted reply")
			}
		})
	}
}

func TestCheckToolPairs(t *testing.T) {
	call := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "f", Arguments: "{}"})
		}
		return m
	}
	result := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "r"}
	}
	user := llm.Message{Role: llm.RoleUser, Content: "u"}
	tests := []struct {
		name string
		msgs []llm.Message
		want string // empty: valid
	}{
		{"no tools", []llm.Message{user, {Role: llm.RoleAssistant, Content: "a"}}, ""},
		{"one pair", []llm.Message{user, call("a"), result("a")}, ""},
		{"two calls answered out of order", []llm.Message{user, call("a", "b"), result("b"), result("a")}, ""},
		{"two rounds", []llm.Message{user, call("a"), result("a"), call("b"), result("b"), {Role: llm.RoleAssistant, Content: "done"}}, ""},
		{"duplicate result", []llm.Message{user, call("a"), result("a"), result("a")}, `second tool result for call "a"`},
		{"unanswered", []llm.Message{user, call("a", "b"), result("a")}, `tool call "b" has no result`},
		{"trailing call", []llm.Message{user, call("a")}, `tool call "a" has no result`},
		{"unknown id", []llm.Message{user, call("a"), result("a"), result("z")}, `unknown call "z"`},
		{"result after a user message", []llm.Message{user, call("a"), user, result("a")}, "does not follow"},
		{"orphan result", []llm.Message{user, result("a")}, "does not follow"},
		{"duplicate call id", []llm.Message{user, call("a", "a"), result("a")}, "used twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := llmtest.Request{Messages: tc.msgs}.CheckToolPairs()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckToolPairs = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckToolPairs = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// sse reads an event stream into its data payloads.
func sse(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an SSE data line", line)
		}
		out = append(out, data)
	}
	return out
}

func TestStreamFormat(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Reply{
		Text:      "Hi there",
		ToolCalls: []llm.ToolCall{{Name: "f", Arguments: `{"a":1}`}, {Name: "g", Arguments: `{}`}},
		Usage:     &llm.Usage{PromptTokens: 7, CompletionTokens: 5},
	})
	resp, body := post(t, t.Context(), srv,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	events := sse(t, body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index    *int   `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	var text strings.Builder
	args := map[int]string{}
	ids := map[int]string{}
	var finish string
	var usageChunks int
	for _, e := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		if c.Usage != nil {
			usageChunks++
			if len(c.Choices) != 0 || c.Usage.PromptTokens != 7 || c.Usage.CompletionTokens != 5 {
				t.Errorf("usage chunk = %s", e)
			}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool-call delta without index: %s", e)
				}
				if tc.ID != "" {
					ids[*tc.Index] = tc.ID
				}
				args[*tc.Index] += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != "Hi there" || args[0] != `{"a":1}` || args[1] != `{}` || finish != "tool_calls" || usageChunks != 1 {
		t.Errorf("assembled text %q args %v finish %q usage chunks %d", text.String(), args, finish, usageChunks)
	}
	if ids[0] == "" || ids[0] == ids[1] {
		t.Errorf("tool call ids %v, want unique", ids)
	}
}

func TestStreamWithoutUsageOption(t *testing.T) {
	srv := llmtest.New(t)
	_, body := post(t, t.Context(), srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if bytes.Contains(body, []byte(`"usage"`)) {
		t.Errorf("usage sent without stream_options.include_usage: %s", body)
	}
}

func TestQueueResponderAndIDs(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("first"), llmtest.ToolCall("f", "{}"), llmtest.ToolCall("f", "{}"))
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	var contents []string
	var ids []string
	for range 5 {
		if len(contents) == 3 {
			srv.SetResponder(func(r llmtest.Request) llmtest.Reply {
				return llmtest.Text("echo " + r.Messages[0].Content + " after " + string(rune('0'+len(srv.Requests()))))
			})
		}
		_, b := post(t, t.Context(), srv, body)
		var c struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID string `json:"id"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		if c.Model != "m" {
			t.Errorf("model %q, want the request's", c.Model)
		}
		m := c.Choices[0].Message
		switch {
		case m.Content == nil:
			contents = append(contents, "<null>")
		default:
			contents = append(contents, *m.Content)
		}
		for _, tc := range m.ToolCalls {
			ids = append(ids, tc.ID)
		}
	}
	want := []string{"first", "<null>", "<null>", "echo hi after 4", "echo hi after 5"}
	if strings.Join(contents, "|") != strings.Join(want, "|") {
		t.Errorf("contents = %q, want %q", contents, want)
	}
	if len(ids) != 2 || ids[0] == ids[1] || ids[0] == "" {
		t.Errorf("tool call ids = %q, want two unique", ids)
	}
	srv.SetResponder(nil)
	_, b := post(t, t.Context(), srv, body)
	if !bytes.Contains(b, []byte(`"content":"ok"`)) {
		t.Errorf("default reply = %s", b)
	}
}

func TestUsageEstimate(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("12345678 and more"), llmtest.ToolCall("read_file", `{"path":"a.md"}`))
	message := `{"role":"user","content":"abcdefghijklmnop"}`
	body := `{"model":"m","messages":[` + message + `]}`
	cl := codec.NewCl100kBase()
	count := func(s string) int {
		n, err := cl.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, want := range [][2]int{
		{count(message), count("12345678 and more")},
		{count(message), count("read_file") + count(`{"path":"a.md"}`)},
	} {
		_, b := post(t, t.Context(), srv, body)
		var c struct {
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
				Details    struct {
					Cached *int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		if c.Usage.Prompt != want[0] || c.Usage.Completion != want[1] || c.Usage.Total != want[0]+want[1] {
			t.Errorf("usage = %+v, want prompt %d completion %d", c.Usage, want[0], want[1])
		}
		// Always sent, as OpenAI does; a short prompt is never cached.
		if c.Usage.Details.Cached == nil || *c.Usage.Details.Cached != 0 {
			t.Errorf("prompt_tokens_details.cached_tokens = %v, want 0", c.Usage.Details.Cached)
		}
	}
	if reqs := srv.Requests(); reqs[0].PromptTokens != count(message) || reqs[0].CachedTokens != 0 {
		t.Errorf("recorded request counts: prompt %d cached %d", reqs[0].PromptTokens, reqs[0].CachedTokens)
	}
}

func TestErrorReplies(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Status(429, "7"), llmtest.Malformed())
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	resp, b := post(t, t.Context(), srv, body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !bytes.Contains(b, []byte(`"code":"rate_limit_exceeded"`)) || !bytes.Contains(b, []byte(llmtest.BodyMarker)) {
		t.Errorf("429 body = %s", b)
	}
	resp, b = post(t, t.Context(), srv, body)
	if resp.StatusCode != 200 || json.Valid(b) {
		t.Errorf("malformed reply: status %d, body %s is valid JSON", resp.StatusCode, b)
	}
}

// TestSlowHonoursClientGone: a slow reply ends when the client gives up;
// otherwise Close, which waits for handlers, would hang the test.
func TestSlowHonoursClientGone(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Slow(time.Hour, llmtest.Text("late")))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := srv.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client err = %v", err)
	}
	srv.Close()
}

func TestWaitRequestsGivesUp(t *testing.T) {
	srv := llmtest.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := srv.WaitRequests(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitRequests = %v, want context.Canceled", err)
	}
}

func TestModelsAndUnknownPaths(t *testing.T) {
	srv := llmtest.New(t)
	resp, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"object":"list"`)) {
		t.Errorf("GET /models: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(srv.URL() + "/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("non-chat requests recorded: %d", n)
	}
}

// Connections counts accepted connections: two requests over one kept-alive
// connection are one, a client that closes after each request makes two.
func TestConnections(t *testing.T) {
	for _, tc := range []struct {
		keepAlive bool
		want      int
	}{{true, 1}, {false, 2}} {
		srv := llmtest.New(t)
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: !tc.keepAlive}}
		for range 2 {
			resp, err := c.Get(srv.URL() + "/models")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if got := srv.Connections(); got != tc.want {
			t.Errorf("keep-alive %v: %d connections, want %d", tc.keepAlive, got, tc.want)
		}
		c.CloseIdleConnections()
	}
}

// Image parts are recorded (type and bytes of a data: URL) and refused
// where OpenAI refuses them.
func TestImageParts(t *testing.T) {
	const ok = `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk=","detail":"auto"}}]}]}`
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("seen"))
	if resp, body := post(t, t.Context(), srv, ok); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	m := srv.Requests()[0].Messages[0]
	if m.Content != "see" || len(m.Images) != 1 || m.Images[0].MIME != "image/png" || string(m.Images[0].Data) != "hi" {
		t.Errorf("recorded %q with %+v", m.Content, m.Images)
	}

	for _, tc := range []struct{ name, body, problem string }{
		{"on an assistant message", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]}`, "image parts on a message of role assistant"},
		{"not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%%%"}}]}]}`, "not valid base64"},
		{"not an image type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/html;base64,aGk="}}]}]}`, "not supported"},
		{"no url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "without image_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			resp, body := post(t, t.Context(), srv, tc.body)
			if resp.StatusCode != 400 || !strings.Contains(srv.Requests()[0].Problem, tc.problem) {
				t.Errorf("status %d, problem %q, want 400 mentioning %q: %s", resp.StatusCode, srv.Requests()[0].Problem, tc.problem, body)
			}
		})
	}
}
