package llmtest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// words returns n words of seeded filler text.
func words(n int, seed uint64) string {
	vocab := strings.Fields("the budget meeting moved to Thursday because the release of the billing service slipped again and nobody wants to deploy on a Friday afternoon before the holidays")
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[rng.IntN(len(vocab))]
	}
	return strings.Join(out, " ")
}

// chatBody is a request body: model, messages and, when tools is set, one
// tool, in the order go-openai writes them.
func chatBody(t *testing.T, model string, tools bool, msgs ...llm.Message) string {
	t.Helper()
	m, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"model":%q,"messages":%s`, model, m)
	if tools {
		body += `,"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`
	}
	return body + "}"
}

// tokens is the fake's view of a request's prompt: each part tokenized on
// its own, tools first.
func tokens(t *testing.T, tools bool, msgs ...llm.Message) []uint {
	t.Helper()
	cl := codec.NewCl100kBase()
	var parts []string
	if tools {
		parts = append(parts, `[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`)
	}
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	var out []uint
	for _, p := range parts {
		ids, _, err := cl.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ids...)
	}
	return out
}

func commonPrefix(a, b []uint) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestPromptCache plays a conversation's requests and checks each
// reported cached_tokens against OpenAI's rule: the longest prefix shared
// with any earlier request, in whole 128-token blocks, counted from 1,024.
func TestPromptCache(t *testing.T) {
	sys := func(minute int) llm.Message {
		return llm.Message{Role: llm.RoleSystem, Content: words(2500, 1) + fmt.Sprintf("\n\nTime: 10:%02d.", minute)}
	}
	user := func(i int) llm.Message { return llm.Message{Role: llm.RoleUser, Content: words(60, uint64(100+i))} }
	reply := llm.Message{Role: llm.RoleAssistant, Content: "Got it."}
	short := llm.Message{Role: llm.RoleSystem, Content: words(200, 2)}

	turn1 := []llm.Message{sys(1), user(1)}
	turn2 := []llm.Message{sys(1), user(1), reply, user(2)}
	turn3 := []llm.Message{sys(2), user(1), reply, user(2), reply, user(3)}
	if n := len(tokens(t, true, turn1...)); n < 2000 {
		t.Fatalf("the long prompt has %d tokens; the test needs > 2,000", n)
	}
	longPrefix := func(a, b []llm.Message) int {
		return commonPrefix(tokens(t, true, a...), tokens(t, true, b...)) / 128 * 128
	}
	cases := []struct {
		name   string
		body   string
		cached int
	}{
		{"first request: nothing cached", chatBody(t, "m", true, turn1...), 0},
		{"a short prompt is never cached", chatBody(t, "m", true, short, user(1)), 0},
		{"the same short prompt again: still under 1,024 tokens", chatBody(t, "m", true, short, user(1)), 0},
		{"the next turn: all of the first, in whole blocks",
			chatBody(t, "m", true, turn2...), len(tokens(t, true, turn1...)) / 128 * 128},
		{"the same request again: all of it, in whole blocks",
			chatBody(t, "m", true, turn2...), len(tokens(t, true, turn2...)) / 128 * 128},
		{"a new minute at the end of the system message: only the part before it",
			chatBody(t, "m", true, turn3...), longPrefix(turn2, turn3)},
		{"another model shares no cache", chatBody(t, "other", true, turn2...), 0},
		{"other tools change the first part: nothing", chatBody(t, "m", false, turn2...), 0},
		{"an earlier request, not only the last one, serves the prefix",
			chatBody(t, "m", true, sys(1), user(1), reply, user(9)), longPrefix(turn2, []llm.Message{sys(1), user(1), reply, user(9)})},
	}
	srv := llmtest.New(t)
	for _, tc := range cases {
		_, b := post(t, t.Context(), srv, tc.body)
		var c struct {
			Usage struct {
				Prompt  int `json:"prompt_tokens"`
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, b)
		}
		if c.Usage.Details.Cached != tc.cached {
			t.Errorf("%s: cached_tokens = %d, want %d (prompt %d)", tc.name, c.Usage.Details.Cached, tc.cached, c.Usage.Prompt)
		}
		if c.Usage.Details.Cached%128 != 0 || c.Usage.Details.Cached > c.Usage.Prompt {
			t.Errorf("%s: cached_tokens %d of prompt %d: not whole blocks within the prompt", tc.name, c.Usage.Details.Cached, c.Usage.Prompt)
		}
	}
	// The minute broke the prefix well inside the system message, and the
	// second turn's prefix was long: the cases above really differ.
	if a, b := longPrefix(turn2, turn3), len(tokens(t, true, turn1...))/128*128; a < 1024 || a >= b {
		t.Errorf("test set-up: the new minute keeps %d cached tokens, the next turn %d", a, b)
	}
}

// TestPromptCacheThroughClient: the cached count reaches llm.Usage, plain
// and streamed (in the final usage chunk), and is summed per purpose.
func TestPromptCacheThroughClient(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", MaxTries: 1})
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: words(1500, 3)}, {Role: llm.RoleUser, Content: "hello there"}}
	var got []llm.Usage
	for _, stream := range []bool{false, true, true} {
		req := llm.Request{Messages: msgs}
		if stream {
			req.OnDelta = func(string) {}
		}
		resp, err := c.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Usage)
	}
	reqs := srv.Requests()
	if got[0].CachedTokens != 0 || got[1].CachedTokens < 1024 || got[1].CachedTokens != reqs[1].CachedTokens || got[2].CachedTokens != reqs[2].CachedTokens {
		t.Errorf("cached tokens per call = %d, %d, %d; the fake counted %d, %d, %d",
			got[0].CachedTokens, got[1].CachedTokens, got[2].CachedTokens, reqs[0].CachedTokens, reqs[1].CachedTokens, reqs[2].CachedTokens)
	}
	if sum := c.Usage()[llm.PurposeChat]; sum.CachedTokens != got[1].CachedTokens+got[2].CachedTokens || sum.CachedTokens > sum.PromptTokens {
		t.Errorf("usage = %+v", sum)
	}

	// A scripted usage is reported as given.
	srv.Push(llmtest.Reply{Text: "x", Usage: &llm.Usage{PromptTokens: 5000, CompletionTokens: 1, CachedTokens: 4096}})
	resp, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Purpose: llm.PurposeArchive})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.CachedTokens != 4096 || c.Usage()[llm.PurposeArchive].CachedTokens != 4096 {
		t.Errorf("scripted cached tokens: response %+v, usage %+v", resp.Usage, c.Usage()[llm.PurposeArchive])
	}
}
