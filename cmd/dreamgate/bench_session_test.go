package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session/sessiontest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// BenchmarkChatOneShotLongSession runs `dreamgate chat -m hi` end to end
// in a session of 1K, 10K and 100K messages (all but 10 archived), each
// beside the same command in an empty session in the same loop: x-empty is
// the ratio of their median times, so the machine's load cancels out.
func BenchmarkChatOneShotLongSession(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := newHarness(b)
			h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
			h.run("chat", "-m", "hi") // first run creates the workspace
			sessiontest.WriteLong(b, sessionsDir(h.state), "terminal:long", n, 10)
			var long, empty []time.Duration
			var longRSS, emptyRSS int64
			b.ResetTimer()
			for i := range b.N {
				for _, name := range []string{"long", "empty"} {
					// A new empty session each time: /new's cost is not the point.
					sess := name
					if name == "empty" {
						sess = fmt.Sprint("empty", i)
					}
					r := h.run("chat", "--session", sess, "-m", "hi")
					if r.code != 0 {
						b.Fatalf("exit %d: %s", r.code, r.stderr)
					}
					if name == "long" {
						long, longRSS = append(long, r.elapsed), max(longRSS, r.maxRSSKB)
					} else {
						empty, emptyRSS = append(empty, r.elapsed), max(emptyRSS, r.maxRSSKB)
					}
				}
			}
			b.StopTimer()
			l, e := percentile(long, 50), percentile(empty, 50)
			b.ReportMetric(float64(l.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(e.Microseconds())/1000, "empty-p50-ms")
			b.ReportMetric(float64(l)/float64(e), "x-empty")
			b.ReportMetric(float64(longRSS)/1024, "maxRSS-MB")
			b.ReportMetric(float64(emptyRSS)/1024, "empty-maxRSS-MB")
		})
	}
}
