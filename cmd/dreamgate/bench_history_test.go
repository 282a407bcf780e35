package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// writeHistory writes a nanobot-format history.jsonl of n entries (about
// 400 bytes of content each, five of them from session key, the rest from
// 100 other sessions) into the workspace ws, with Dream's cursor at dream.
func writeHistory(tb testing.TB, ws string, n int, key string, dream int) {
	tb.Helper()
	dir := filepath.Join(ws, "memory")
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
		fmt.Fprintf(w, `{"cursor": %d, "timestamp": "2026-04-03 00:02", "content": "- %d %s\n- %s", "session_key": "%s"}`+"\n", i, i, fact, fact, sk)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	for name, v := range map[string]int{".cursor": n, ".dream_cursor": dream} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(v)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkChatOneShotHistory runs `dreamgate chat -m hi` end to end, as
// BenchmarkChatOneShot does, in a workspace whose history.jsonl holds N
// entries that Dream has read ("read") or not ("unread"), alternating each
// run with one in a workspace with an empty history. x-empty is the ratio
// of the medians (goal: at most 2 at 100,000 entries, read).
func BenchmarkChatOneShotHistory(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, state := range []string{"read", "unread"} {
			b.Run(fmt.Sprintf("%s/%dK", state, n/1000), func(b *testing.B) {
				empty, full := newHarness(b), newHarness(b)
				for _, h := range []*harness{empty, full} {
					h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
					h.run("chat", "-m", "hi") // creates the workspace
				}
				dream := 0
				if state == "read" {
					dream = n
				}
				writeHistory(b, full.ws, n, "terminal:default", dream)
				full.run("chat", "-m", "hi") // the first start after the archive grew
				var lat, base []time.Duration
				var maxRSS int64
				b.ResetTimer()
				for range b.N {
					for _, h := range []*harness{empty, full} {
						r := h.run("chat", "-m", "hi")
						if r.code != 0 {
							b.Fatalf("exit %d: %s", r.code, r.stderr)
						}
						if h == full {
							lat = append(lat, r.elapsed)
							maxRSS = max(maxRSS, r.maxRSSKB)
						} else {
							base = append(base, r.elapsed)
						}
					}
				}
				b.StopTimer()
				p50, e50 := percentile(lat, 50), percentile(base, 50)
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(e50.Microseconds())/1000, "empty-p50-ms")
				b.ReportMetric(float64(p50)/float64(e50), "x-empty")
				b.ReportMetric(float64(maxRSS)/1024, "maxRSS-MB")
			})
		}
	}
}
