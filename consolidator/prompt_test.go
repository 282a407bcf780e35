package consolidator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

func TestBeforeRendersHistory(t *testing.T) {
	c, store := newTestConsolidator(t, newFakeModel(t), baseConfig)
	for _, e := range []struct{ content, key string }{
		{"- Ana prefers tea", "k"},
		{"- another chat's fact", "other"},
		{"- the deploy is on Friday", "k"},
	} {
		if _, err := store.Append(e.content, e.key); err != nil {
			t.Fatal(err)
		}
	}
	recent := "\n\n# Recent history\n\nNotes archived from earlier exchanges in this chat, not yet folded into long-term memory:\n\n" +
		"- [2026-04-03 00:02] - Ana prefers tea\n- [2026-04-03 00:02] - the deploy is on Friday"
	tests := []struct {
		name, key, summary string
		want               string
	}{
		{"history and summary", "k", "  - the last summary\n", recent + "\n\n# Last archive summary of this conversation\n\n- the last summary"},
		{"summary already in the history", "k", "- the deploy is on Friday", recent},
		{"summary alone", "quiet", "- the last summary", "\n\n# Last archive summary of this conversation\n\n- the last summary"},
		{"neither", "quiet", " ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(tt.key, user("hi"))
			s.summary = tt.summary
			p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED", History: "stale", Tools: "TOOLS"})
			if err != nil || rep.Rounds != 0 {
				t.Fatal(rep, err)
			}
			if p.Fixed != "FIXED" || p.Tools != "TOOLS" || p.History != tt.want {
				t.Errorf("prompt %+v\nwant history %q", p, tt.want)
			}
			if p.System() != "FIXED"+tt.want {
				t.Errorf("system prompt %q: Fixed must lead, History follow", p.System())
			}
		})
	}
}

// After archiving, the returned prompt shows what was archived: the turn
// that follows must not lose the archived messages from view.
func TestBeforeRendersWhatItArchived(t *testing.T) {
	m := newFakeModel(t, step{resp: llm.Response{Content: "- EVIDENCE-42 Ana prefers tea", FinishReason: llm.FinishStop}})
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := outcomeSession()
	p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED"})
	if err != nil || rep.Rounds != 1 {
		t.Fatal(rep, err)
	}
	if !strings.HasPrefix(p.History, "\n\n# Recent history\n\n") || !strings.HasSuffix(p.History, "] - EVIDENCE-42 Ana prefers tea") {
		t.Errorf("history after archiving: %q", p.History)
	}
	if strings.Contains(p.History, "old summary") || strings.Contains(p.History, "# Last archive summary") {
		t.Errorf("the replaced summary, or the new one twice: %q", p.History)
	}
}

func TestStatusReportsTheBudget(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want Budget
	}{
		// The prompt: a 1000-token message, a 500-token fixed part, each
		// with MessageOverhead, plus the runtime allowance.
		{"defaults", baseConfig, Budget{Estimate: 1004 + 504 + 64, Limit: 7976, Trigger: 5000, Target: 3000, Messages: 1}},
		{"small window", Config{ContextWindow: 4000, MaxTokens: 500}, Budget{Estimate: 1572, Limit: 2476, Trigger: 2000, Target: 1200, Messages: 1}},
		{"ratios", Config{ContextWindow: 10000, MaxTokens: 1000, ConsolidateRatio: 0.9, TargetRatio: 0.6}, Budget{Estimate: 1572, Limit: 7976, Trigger: 7976, Target: 6000, Messages: 1}},
		{"budget off", Config{}, Budget{Messages: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestConsolidator(t, newFakeModel(t), tt.cfg)
			s := newSession("k", user(words("", 1000)))
			if got := c.Status(s, Prompt{Fixed: words("", 300), Tools: words("", 200)}); got != tt.want {
				t.Errorf("Status = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStatusCountsHistoryAndFloor(t *testing.T) {
	c, store := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := newSession("k", user(words("", 1000)))
	bare := c.Status(s, Prompt{}).Estimate
	if _, err := store.Append("- fact"+words("", 200), "k"); err != nil {
		t.Fatal(err)
	}
	withHistory := c.Status(s, Prompt{}).Estimate
	if d := withHistory - bare; d < 200 || d > 240 {
		t.Errorf("the Recent history added %d tokens, want about 200 and its heading", d)
	}
	p, _, err := c.Before(t.Context(), s, Prompt{})
	if err != nil {
		t.Fatal(err)
	}
	c.observe(s, p, sent(s, (withHistory-runtimeAllowance)*2))
	if got := c.Status(s, Prompt{}).Estimate; got != (withHistory-runtimeAllowance)*2+runtimeAllowance {
		t.Errorf("with a provider counting twice as much: %d, want %d", got, (withHistory-runtimeAllowance)*2+runtimeAllowance)
	}
}

func TestAfterRecordsTheProviderCount(t *testing.T) {
	// 4000 tokens by cl100k is under the 5000 trigger; a provider that
	// counts 1.5x as many makes it 6000, over.
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := newSession("k", user(words("", 1000)), assistant(words("", 1000)), user(words("", 1000)), assistant(words("", 1000)))
	p, rep, err := c.Before(t.Context(), s, Prompt{})
	if err != nil || rep.Rounds != 0 {
		t.Fatal(rep, err)
	}
	over := sent(s, c.estimate(s, p.counted())*3/2)
	s.append(user("next"))

	// A stopped turn: the count is recorded, nothing is archived.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if rep, err := c.After(ctx, s, p, over); err != nil || rep.Rounds != 0 || len(m.Requests()) != 0 || s.lc != 0 {
		t.Fatalf("after a stopped turn: %+v, %v, %d calls, lc %d", rep, err, len(m.Requests()), s.lc)
	}
	rep, err = c.After(t.Context(), s, p, over)
	if err != nil || rep.Rounds != 1 || s.lc == 0 {
		t.Errorf("with the provider's count: %+v, %v", rep, err)
	}
}

// A failed round still hands back a prompt to send, rendered after what
// was written: here the entry reached history.jsonl but the session could
// not record it.
func TestBeforeFailureReturnsAUsablePrompt(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := outcomeSession()
	s.setErr = errors.New("disk full")
	p, _, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED", Tools: "TOOLS"})
	if err == nil {
		t.Fatal("no error")
	}
	if p.Fixed != "FIXED" || p.Tools != "TOOLS" || !strings.Contains(p.History, "] - summary 1") ||
		!strings.HasSuffix(p.History, "# Last archive summary of this conversation\n\nold summary") {
		t.Errorf("prompt after a failed round: %+v", p)
	}
}
