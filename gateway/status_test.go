package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
)

// /status's budget line comes from the consolidator's report: the gateway
// knows neither the context window nor the reply's allowance.
func TestStatusShowsTheConsolidatorsBudget(t *testing.T) {
	tests := []struct {
		name              string
		window, maxTokens int
		usable            string // "" when the budget is off: no line
	}{
		{"small window", 16000, 2000, "13.0k"}, // 16000 - 2000 - 1024
		{"default window", 128000, 4096, "122.9k"},
		{"budget off", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, nil)
			cons := useRealConsolidator(t, env, tt.window, tt.maxTokens)
			wait(t, must(env.g.Submit(t.Context(), inbound("st", "hello"))))
			r := wait(t, must(env.g.Submit(t.Context(), inbound("st", "/status"))))

			sess, err := env.sessions.Get("test:st")
			if err != nil {
				t.Fatal(err)
			}
			bu := cons.Status(sess, consolidator.Prompt{Fixed: env.g.deps.Prompts.Fixed(), Tools: env.g.toolText})
			if tt.usable == "" {
				if strings.Contains(r.Reply, "Prompt:") || bu.Limit != 0 || bu.Estimate != 0 {
					t.Errorf("budget off, yet /status shows one:\n%s", r.Reply)
				}
				return
			}
			if kTokens(bu.Limit) != tt.usable || bu.Estimate < 500 { // identity, files, tools: several hundred tokens
				t.Fatalf("consolidator's budget %+v", bu)
			}
			want := fmt.Sprintf("Prompt: about %s tokens of %s usable (%d%%)\n", kTokens(bu.Estimate), tt.usable, bu.Estimate*100/bu.Limit)
			if !strings.Contains(r.Reply, want) {
				t.Errorf("/status lacks %q:\n%s", want, r.Reply)
			}
		})
	}
}
