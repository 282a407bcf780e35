package gateway

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// BenchmarkTurnOverheadHistory: what the gateway adds to a chat turn, as
// BenchmarkTurnOverhead measures it, when history.jsonl holds N entries
// Dream has not read — all but five of them from other sessions — and
// the turns run in a process that has read it once. Each turn alternates
// with one of a gateway whose history is empty; x-empty is the ratio of
// the medians, extra-µs their difference (goal: the p50 under 200 µs).
func BenchmarkTurnOverheadHistory(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("%dK", n/1000), func(b *testing.B) {
			newEnv := func(entries int) *testEnv {
				var recent atomic.Bool // the last prompt showed Recent history
				env := newTestEnv(b, func(_ context.Context, req llm.Request) (llm.Response, error) {
					recent.Store(strings.Contains(req.Messages[0].Content, "# Recent history"))
					return textReply("ok"), nil
				}, nil)
				if entries > 0 {
					writeUnreadHistory(b, filepath.Join(env.ws, "memory"), entries, "test:hist")
				}
				useRealConsolidator(b, env, 128000, 4096)
				for range 3 { // warm: the first read of the history, caches, counts
					wait(b, must(env.g.Submit(context.Background(), inbound("hist", "warm up"))))
				}
				drain(env)
				if recent.Load() != (entries > 0) {
					b.Fatalf("%d entries: Recent history shown: %v", entries, recent.Load())
				}
				return env
			}
			full, empty := newEnv(n), newEnv(0)
			turn := func(env *testEnv) time.Duration {
				start := time.Now()
				done, err := env.g.Submit(context.Background(), inbound("hist", "hello again"))
				if err != nil {
					b.Fatal(err)
				}
				if r := <-done; r.Err != nil {
					b.Fatal(r.Err)
				}
				took := time.Since(start)
				<-env.ch.got
				// Keep the unarchived tail at ten messages, as archiving
				// would: otherwise each turn replays a session that grew by
				// every turn before it, the figure measures that growth
				// instead of the history, and the run never ends at 100K.
				sess, err := env.sessions.Get("test:hist")
				if err != nil {
					b.Fatal(err)
				}
				if sess.Len() > 10 {
					if err := sess.SetLastConsolidated(sess.Len()-10, ""); err != nil {
						b.Fatal(err)
					}
				}
				return took
			}
			var lat, base []time.Duration
			b.ResetTimer()
			for range b.N {
				lat = append(lat, turn(full))
				base = append(base, turn(empty))
			}
			b.StopTimer()
			slices.Sort(lat)
			slices.Sort(base)
			p50, e50 := lat[len(lat)/2], base[len(base)/2]
			b.ReportMetric(float64(p50.Nanoseconds())/1000, "p50-µs")
			b.ReportMetric(float64(e50.Nanoseconds())/1000, "empty-p50-µs")
			b.ReportMetric(float64(p50-e50)/1000, "extra-µs")
			b.ReportMetric(float64(p50)/float64(e50), "x-empty")
		})
	}
}

// writeUnreadHistory writes n unread entries (about 400 bytes each), five
// of them of session key, into the memory directory dir.
func writeUnreadHistory(tb testing.TB, dir string, n int, key string) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fact := strings.Repeat("the user keeps the deploy notes in the wiki; ", 9)
	for i := 1; i <= n; i++ {
		sk := fmt.Sprintf("slack:C%03d", i%100)
		if i%(n/5) == 0 {
			sk = key
		}
		fmt.Fprintf(w, `{"cursor": %d, "timestamp": "2026-04-03 00:02", "content": "- %d %s", "session_key": "%s"}`+"\n", i, i, fact, sk)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".cursor"), []byte(strconv.Itoa(n)), 0o644); err != nil {
		tb.Fatal(err)
	}
}
