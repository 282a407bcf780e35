package dream

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// instantModel answers at once: phase 1 with one finding, phase 2 with one
// edit of USER.md and then a final reply. It makes every run a full run
// (analysis, edit, diff, commit) with no model time in it.
type instantModel struct{ n int }

func (m *instantModel) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	if req.Purpose == llm.PurposeDreamAnalysis {
		m.n++
		return llm.Response{Content: fmt.Sprintf("[USER] fact %d", m.n), FinishReason: llm.FinishStop}, nil
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
		return llm.Response{Content: "done", FinishReason: llm.FinishStop}, nil
	}
	c := editCall("USER.md", "# User\n", fmt.Sprintf("# User\n- fact %d\n", m.n))
	c.ID = "call_" + strconv.Itoa(m.n)
	return llm.Response{ToolCalls: []llm.ToolCall{c}, FinishReason: llm.FinishToolCalls}, nil
}

// BenchmarkBookkeeping is Dream's own cost outside model time on a
// 1000-entry history: batch read, hand-edit check, both phases' plumbing,
// diff, commit, cursor, compaction (each run drops the 20 entries it read
// beyond 1000).
func BenchmarkBookkeeping(b *testing.B) {
	e := newEnv(b)
	const total, batch = 1000 + DefaultMaxBatchSize, DefaultMaxBatchSize
	e.hist.seed(b, 0, total, func(i int) string {
		return fmt.Sprintf("- User %d mentioned a durable fact about project %d and a preference about tooling.", i%7, i)
	})
	history, err := os.ReadFile(e.hist.path())
	if err != nil {
		b.Fatal(err)
	}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: &instantModel{}, History: e.hist, Repo: e.repo})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(e.hist.path(), history, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := e.hist.SetDreamCursor(total - batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := d.Run(b.Context(), TriggerCLI, AllScopes(), nil)
		if err != nil || rep.Commit == "" || rep.Dropped != batch {
			b.Fatalf("run: %+v, %v", rep, err)
		}
	}
}

// BenchmarkRunTokens reports the model calls and tokens of one Dream on a
// 20-entry batch, through the real client and the llmtest fake (which
// counts what is actually sent with cl100k).
func BenchmarkRunTokens(b *testing.B) {
	e := newEnv(b)
	// Typical memory files of a few months' use.
	var mem strings.Builder
	mem.WriteString("# Memory\n\n")
	for i := range 40 {
		fmt.Fprintf(&mem, "- Decision %d: the team chose option %d for reason %d, revisited in sprint %d.\n", i, i%3, i*7, i%5)
	}
	testkit.WriteFile(b, e.ws, "memory/MEMORY.md", mem.String())
	if _, err := e.repo.Commit("manual: seed", ""); err != nil {
		b.Fatal(err)
	}
	d := e.dreamer(Config{})
	var calls, prompt, completion int
	runs := 0
	for b.Loop() {
		b.StopTimer()
		e.hist.seed(b, runs*DefaultMaxBatchSize, DefaultMaxBatchSize, func(i int) string {
			return fmt.Sprintf("- User asked about deployment %d; decided to use blue-green releases\n- User prefers short answers with code first (%d)", i, i)
		})
		n := runs + 1
		e.srv.Push(
			llmtest.Text(fmt.Sprintf("[MEMORY] releases are blue-green (%d)\n[USER] prefers short answers with code first", n)),
			calls1(editCall("memory/MEMORY.md", "# Memory\n", fmt.Sprintf("# Memory\n\n- Releases are blue-green (%d).\n", n))),
			llmtest.Text("Done."),
		)
		b.StartTimer()
		rep, err := d.Run(b.Context(), TriggerCLI, AllScopes(), nil)
		if err != nil || rep.Commit == "" {
			b.Fatalf("run: %+v, %v", rep, err)
		}
		calls += rep.Calls
		prompt += rep.Usage.PromptTokens
		completion += rep.Usage.CompletionTokens
		runs++
	}
	b.ReportMetric(float64(calls)/float64(runs), "calls/run")
	b.ReportMetric(float64(prompt)/float64(runs), "prompt-tokens/run")
	b.ReportMetric(float64(completion)/float64(runs), "completion-tokens/run")
}

func calls1(c llm.ToolCall) llmtest.Reply { return calls(c) }

// BenchmarkStatus is what /status and a /metrics scrape cost on Dream's
// side with 1000 unread history entries: the ledger read, the cursor file,
// the backlog.
func BenchmarkStatus(b *testing.B) {
	e := newEnv(b)
	e.hist.seed(b, 0, 1000, func(i int) string {
		return fmt.Sprintf("- User %d mentioned a durable fact about project %d and a preference about tooling.", i%7, i)
	})
	d := e.dreamer(Config{})
	b.ReportAllocs()
	for b.Loop() {
		if st := d.Status(AllScopes()); st.Backlog != 1000 {
			b.Fatalf("status = %+v", st)
		}
	}
}

// BenchmarkLedgerCursor is what a chat turn pays to know how far Dream read
// a scope (the prompt's Recent history, consolidator Config.Folded): the
// ledger's record and the cursor file read, with 50 scopes in the record.
func BenchmarkLedgerCursor(b *testing.B) {
	e := newEnv(b)
	r := record{Scopes: map[audience.Scope]*progress{}}
	for i := range 50 {
		r.Scopes[audience.Scope(fmt.Sprintf("person-slack-t1-u%d", i))] = &progress{Cursor: i, LastRun: &LastRun{Trigger: TriggerCron, Outcome: OutcomeCompleted}}
	}
	e.writeRecord(r)
	l := NewLedger(e.ws, e.hist, nil)
	b.ReportAllocs()
	for b.Loop() {
		if c, err := l.Cursor("person-slack-t1-u7"); err != nil || c != 7 {
			b.Fatalf("cursor %d, %v", c, err)
		}
	}
}
