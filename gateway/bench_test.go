package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
)

// BenchmarkTurnOverhead measures what the gateway itself adds to a chat
// turn — queueing, saving, the budget check, building the prompt, sending —
// with a model that answers at once, on a session that already holds 10,000
// messages (most of them archived, as they would be).
func BenchmarkTurnOverhead(b *testing.B) {
	env := newTestEnv(b, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("ok"), nil
	}, func(c *Config, d *Deps) {
		c.ContextWindow, c.MaxTokens = 128000, 4096
	})
	store, err := history.Open(filepath.Join(env.ws, "memory"), history.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cons := consolidator.New(env.model, store, consolidator.Config{ContextWindow: 128000, MaxTokens: 4096}, nil)
	env.g.deps.Consolidator = cons
	env.g.deps.Prompts = NewPromptBuilder(env.ws, cons, nil)

	sess, err := env.sessions.Get("test:big")
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]llm.Message, 0, 10000)
	for i := range 5000 {
		msgs = append(msgs,
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("question %d about the project", i)},
			llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("answer %d with some detail", i)})
	}
	if err := sess.Append(msgs...); err != nil {
		b.Fatal(err)
	}
	if err := sess.SetLastConsolidated(9990, ""); err != nil {
		b.Fatal(err)
	}
	for range 3 { // warm: caches, counts
		wait(b, must(env.g.Submit(context.Background(), inbound("big", "warm up"))))
	}
	drain(env)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		done, err := env.g.Submit(context.Background(), inbound("big", "hello again"))
		if err != nil {
			b.Fatal(err)
		}
		if r := <-done; r.Err != nil {
			b.Fatal(r.Err)
		}
		lat = append(lat, time.Since(start))
		<-env.ch.got
		// Keep the unarchived tail at ten messages, as archiving would: the
		// figure is about the session's length, not the prompt's.
		b.StopTimer()
		if err := sess.SetLastConsolidated(sess.Len()-10, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func drain(env *testEnv) {
	for {
		select {
		case <-env.ch.got:
		default:
			return
		}
	}
}
