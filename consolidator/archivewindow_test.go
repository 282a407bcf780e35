package consolidator

import (
	"fmt"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// Archive calls that go to another model than chat turns (a smaller local
// one) are cut to that model's window, not the chat model's.
func TestArchiveCallsFitTheArchiveModelsWindow(t *testing.T) {
	small, _ := newTestConsolidator(t, newFakeModel(t), Config{ContextWindow: 4000, MaxTokens: 500})
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, Config{ContextWindow: 128000, MaxTokens: 4096, ArchiveContextWindow: 4000, ArchiveMaxTokens: 500})
	if got, want := c.inputBudget(), small.inputBudget(); got != want {
		t.Fatalf("archive input budget %d, want the archive model's %d", got, want)
	}
	if c.hard != 128000-4096-safetyMargin {
		t.Errorf("the chat prompt's hard limit %d follows the archive model", c.hard)
	}
	var msgs []llm.Message
	for i := range 6 {
		msgs = append(msgs, user(words(fmt.Sprintf("q%d", i), 200)), assistant(words(fmt.Sprintf("a%d", i), 200)))
	}
	if _, err := c.ArchiveTail(t.Context(), newSession("terminal:t", msgs...)); err != nil {
		t.Fatal(err)
	}
	tr := transcripts(m)
	if len(tr) < 2 {
		t.Fatalf("%d archive calls; 2,400 words do not fit a 4K window in one", len(tr))
	}
	for i, text := range tr {
		if n := c.counter.Count(text); n > c.archiveHard {
			t.Errorf("archive call %d has %d tokens, over the archive model's limit %d", i, n, c.archiveHard)
		}
	}
}
