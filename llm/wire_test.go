package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

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
