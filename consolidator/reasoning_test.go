package consolidator

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

func TestStripReasoning(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "  - Ana prefers tea\n", "- Ana prefers tea"},
		{"think block", "<think>the user said tea</think>\n- Ana prefers tea", "- Ana prefers tea"},
		{"two think blocks", "<think>a</think>Hello <think>b</think>world", "Hello world"},
		{"unclosed think", "Answer.<think>and then I", "Answer."},
		{"only reasoning", "<think>hmm", ""},
		{"closing tag only: opened by the template", "the user said tea, so\n</think>\n\n- Ana prefers tea", "- Ana prefers tea"},
		{"harmony analysis and final",
			"<|channel|>analysis<|message|>User wants tea facts.<|end|><|start|>assistant<|channel|>final<|message|>- Ana prefers tea<|return|>",
			"- Ana prefers tea"},
		{"harmony with start prefix",
			"<|start|>assistant<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>Hi Ana.",
			"Hi Ana."},
		{"harmony analysis only, unclosed", "<|channel|>analysis<|message|>We need to think about", ""},
		{"harmony analysis then plain text",
			"<|channel|>analysis<|message|>secret<|end|>The answer is 4.", "The answer is 4."},
		{"harmony commentary dropped",
			"<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\":\"x\"}<|call|><|channel|>final<|message|>Done.",
			"Done."},
		{"harmony final with constrain", "<|channel|>final <|constrain|>markdown<|message|>**ok**<|end|>", "**ok**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripReasoning(tt.in); got != tt.want {
				t.Errorf("StripReasoning(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// No reasoning reaches history.jsonl: not through the transcript the
// archive call reads, the summary it returns, or the [RAW] fallback.
func TestReasoningNeverReachesTheArchive(t *testing.T) {
	leaky := func() *fakeSession {
		return newSession("slack:C1",
			user("which tea do I like?"),
			assistant("<think>SECRET-1 the user asked about tea</think>You like green tea."),
			user("and my cat?"),
			assistant("<|channel|>analysis<|message|>SECRET-2 recall the cat<|end|><|start|>assistant<|channel|>final<|message|>Your cat is Miso."),
			user("thanks"),
			assistant("SECRET-3 opened by the template</think>You're welcome."),
			user("bye"),
		)
	}
	noSecret := func(t *testing.T, what, s string) {
		t.Helper()
		if strings.Contains(s, "SECRET") || strings.Contains(s, "think>") || strings.Contains(s, "<|") {
			t.Errorf("%s carries reasoning:\n%s", what, s)
		}
	}

	t.Run("summary and transcript", func(t *testing.T) {
		m := newFakeModel(t, step{resp: llm.Response{
			Content:      "<|channel|>analysis<|message|>SECRET-4 list facts<|end|><|start|>assistant<|channel|>final<|message|>- Likes green tea\n- Cat: Miso<|return|>",
			FinishReason: llm.FinishStop,
		}})
		c, store := newTestConsolidator(t, m, baseConfig)
		s := leaky()
		if _, err := c.ArchiveTail(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		tr := transcripts(m)
		if len(tr) != 1 {
			t.Fatalf("%d archive calls, want 1", len(tr))
		}
		noSecret(t, "the archive transcript", tr[0])
		for _, want := range []string{"You like green tea.", "Your cat is Miso.", "You're welcome."} {
			if !strings.Contains(tr[0], want) {
				t.Errorf("the transcript lost the answer %q:\n%s", want, tr[0])
			}
		}
		entries, _ := store.Since(0, 0)
		if len(entries) != 1 || entries[0].Content != "- Likes green tea\n- Cat: Miso" {
			t.Fatalf("history = %+v", entries)
		}
		noSecret(t, "the last summary", s.LastSummary())
	})

	t.Run("raw fallback", func(t *testing.T) {
		m := newFakeModel(t, step{resp: llm.Response{Content: "- cut", FinishReason: llm.FinishLength}})
		c, store := newTestConsolidator(t, m, baseConfig)
		if _, err := c.ArchiveTail(t.Context(), leaky()); err != nil {
			t.Fatal(err)
		}
		entries, _ := store.Since(0, 0)
		if len(entries) != 1 || !strings.HasPrefix(entries[0].Content, "[RAW]") {
			t.Fatalf("history = %+v", entries)
		}
		noSecret(t, "the [RAW] entry", entries[0].Content)
		if !strings.Contains(entries[0].Content, "ASSISTANT: Your cat is Miso.") {
			t.Errorf("the [RAW] entry lost the answer:\n%s", entries[0].Content)
		}
	})
}
