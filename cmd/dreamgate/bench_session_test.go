package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
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
			writeLongChat(b, sessionsDir(h.state), "terminal:long", n, 10)
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

// writeLongChat writes a conversation of n chat-sized messages under key,
// all but tail of them archived.
func writeLongChat(b *testing.B, dir, key string, n, tail int) {
	st, err := session.NewStore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s, err := st.Get(key)
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("some words of a chat message ", 3)
	msgs := make([]llm.Message, 0, 1000)
	for i := range n {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Content: fmt.Sprint(pad, i)})
		if len(msgs) == cap(msgs) || i == n-1 {
			if err := s.Append(msgs...); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	if err := s.SetLastConsolidated(n-tail, "- earlier"); err != nil {
		b.Fatal(err)
	}
}
