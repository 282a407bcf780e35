package llm_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// toFake sends every request to the fake, whatever host it was for, so
// that a client configured for api.openai.com can be tested offline.
type toFake struct{ fake *url.URL }

func (t toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = t.fake.Scheme, t.fake.Host
	r.Host = t.fake.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestPromptCacheKey: prompt_cache_key goes to OpenAI's endpoint, or
// anywhere when switched on; it is a stable hash per conversation, never
// the conversation's name; other servers get no unknown field.
func TestPromptCacheKey(t *testing.T) {
	srv := llmtest.New(t)
	fake, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	viaOpenAI := func(c *llm.Config) {
		c.BaseURL = "https://api.openai.com/v1"
		c.HTTPClient = &http.Client{Transport: toFake{fake}}
	}
	const slackKey = "slack:T0123:C0456:1712.55"
	cases := []struct {
		name    string
		mod     func(*llm.Config)
		convs   []string
		stream  bool
		wantKey bool
	}{
		{"another server: none", nil, []string{slackKey}, false, false},
		{"another server, switched on", func(c *llm.Config) { c.PromptCacheKey = true }, []string{slackKey, slackKey, "terminal:default"}, false, true},
		{"another server, switched on, streamed", func(c *llm.Config) { c.PromptCacheKey = true }, []string{slackKey, slackKey, "terminal:default"}, true, true},
		{"api.openai.com", viaOpenAI, []string{slackKey, slackKey, "terminal:default"}, false, true},
		{"api.openai.com, no conversation", viaOpenAI, []string{""}, false, false},
	}
	keys := map[string]string{} // conversation -> key, across clients
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, srv.URL(), tc.mod)
			before := len(srv.Requests())
			for _, conv := range tc.convs {
				req := userReq("hello")
				// An empty tool result makes the body be mended for
				// content too: both mends must hold.
				req.Messages = append(req.Messages,
					llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
					llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: ""})
				req.CacheKey = conv
				if tc.stream {
					req.OnDelta = func(string) {}
				}
				if _, err := c.Chat(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			reqs := srv.Requests()[before:]
			for i, r := range reqs {
				conv := tc.convs[i]
				if r.Problem != "" {
					t.Errorf("request %d refused: %s", i, r.Problem)
				}
				if !tc.wantKey {
					if r.CacheKey != "" || strings.Contains(string(r.Body), "prompt_cache_key") {
						t.Errorf("request %d carries prompt_cache_key %q", i, r.CacheKey)
					}
					continue
				}
				if r.CacheKey == "" || len(r.CacheKey) > 64 || strings.Contains(string(r.Body), conv) ||
					strings.Contains(r.CacheKey, "T0123") || strings.Contains(r.CacheKey, "terminal") {
					t.Errorf("request %d: prompt_cache_key %q must be a short hash, not the name %q", i, r.CacheKey, conv)
				}
				if k, seen := keys[conv]; seen && k != r.CacheKey {
					t.Errorf("conversation %q: key %q, earlier %q: not stable", conv, r.CacheKey, k)
				}
				keys[conv] = r.CacheKey
			}
		})
	}
	if len(keys) != 2 || keys[slackKey] == keys["terminal:default"] {
		t.Errorf("keys per conversation = %v, want two different ones", keys)
	}
}
