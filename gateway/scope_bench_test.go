package gateway

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// BenchmarkTurnOverheadScoped is what a chat turn costs the gateway for
// the operator (the workspace's files and tools) and for a DM (its team's
// and its own scope's files in the prompt, file tools opened on its
// folder every turn), with a model that answers at once.
func BenchmarkTurnOverheadScoped(b *testing.B) {
	for _, a := range []audience.Audience{operator, anaDM} {
		b.Run(string(a.Kind), func(b *testing.B) {
			env := scopeEnv(b, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
			useRealConsolidator(b, env, 128000, 4096)
			in := withAudience(inbound("bench", "hello"), a)
			in.SenderID, in.SenderName = a.Person, "Ana"
			for range 3 { // warm: the scope's folder, the prompt's cache
				in.MessageID = fmt.Sprint(time.Now().UnixNano())
				wait(b, must(env.g.Submit(context.Background(), in)))
			}
			drain(env)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				in.MessageID = fmt.Sprint("m", i)
				start := time.Now()
				done, err := env.g.Submit(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				if r := <-done; r.Err != nil {
					b.Fatal(r.Err)
				}
				lat = append(lat, time.Since(start))
				<-env.ch.got
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}
