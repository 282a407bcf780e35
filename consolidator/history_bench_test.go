package consolidator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
)

// historySizes are the history.jsonl lengths the history benchmarks grow
// through, to show how their cost grows.
var historySizes = []int{1000, 10000, 100000}

// ownEntries is how many entries of the benchmarked session a generated
// history holds, spread through it; the rest belong to other sessions.
const ownEntries = 5

// writeBenchHistory writes a history.jsonl of n entries (about 400 bytes
// of content each, from 100 other sessions and ownEntries of key) into dir
// and sets the dream cursor to dreamCursor.
func writeBenchHistory(tb testing.TB, dir string, n int, key string, dreamCursor int) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	contents := make([]string, 64)
	for i := range contents {
		contents[i] = "- " + prose(400, uint64(i))
	}
	type line struct {
		Cursor     int    `json:"cursor"`
		Timestamp  string `json:"timestamp"`
		Content    string `json:"content"`
		SessionKey string `json:"session_key"`
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := 1; i <= n; i++ {
		sk := fmt.Sprintf("slack:C%03d", i%100)
		if i%(n/ownEntries) == 0 {
			sk = key
		}
		if err := enc.Encode(line{Cursor: i, Timestamp: "2026-04-03 00:02", Content: contents[i%len(contents)], SessionKey: sk}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	for name, v := range map[string]int{".cursor": n, ".dream_cursor": dreamCursor} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(v)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// oneShot is what a one-shot `dreamgate chat` does with history.jsonl:
// open the store and render one session's Recent history (Before).
func oneShot(b *testing.B, dir string, s Session) Prompt {
	store, err := history.Open(dir, history.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := New(newFakeModel(b), store, Config{ContextWindow: 128000, MaxTokens: 4096}, nil)
	p, rep, err := c.Before(context.Background(), s, Prompt{Fixed: "You are a helpful assistant."})
	if err != nil || rep.Rounds != 0 {
		b.Fatal(rep, err)
	}
	return p
}

// BenchmarkOneShotHistory: a new process's history cost — opening the store
// and rendering one session's Recent history — with a history of N entries
// that Dream has read ("read") or not ("unread"), and not with the index an
// earlier start left ("unread-cold": the first start after the archive
// grew, or after the index was deleted). Each iteration also does the same
// on an empty history, and x-empty is the ratio of the two (goal: at most 2
// for a 100,000-entry history).
func BenchmarkOneShotHistory(b *testing.B) {
	const key = "terminal:bench"
	s := newSession(key, user("hi"))
	empty := b.TempDir()
	for _, n := range historySizes {
		dir := b.TempDir()
		writeBenchHistory(b, dir, n, key, 0)
		for _, state := range []string{"read", "unread", "unread-cold"} {
			b.Run(fmt.Sprintf("%s/%dK", state, n/1000), func(b *testing.B) {
				cold := state == "unread-cold"
				dc := 0
				if state == "read" {
					dc = n
				}
				if err := os.WriteFile(filepath.Join(dir, ".dream_cursor"), []byte(strconv.Itoa(dc)), 0o644); err != nil {
					b.Fatal(err)
				}
				// The first open may leave what later ones reuse, as the
				// gateway's or an earlier chat's would.
				if p := oneShot(b, dir, s); (state != "read") != (p.History != "") {
					b.Fatalf("%s history rendered %q", state, p.History)
				}
				var full, base time.Duration
				for b.Loop() {
					if cold {
						b.StopTimer()
						if err := os.Remove(filepath.Join(dir, ".history_index")); err != nil && !os.IsNotExist(err) {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					t0 := time.Now()
					oneShot(b, empty, s)
					t1 := time.Now()
					oneShot(b, dir, s)
					base += t1.Sub(t0)
					full += time.Since(t1)
				}
				b.ReportMetric(float64(full.Microseconds())/float64(b.N), "µs/open")
				b.ReportMetric(float64(base.Microseconds())/float64(b.N), "empty-µs/open")
				b.ReportMetric(float64(full)/float64(base), "x-empty")
			})
		}
	}
}

// BenchmarkBeforeUnreadHistory: the per-turn cost of Before (the budget
// check and the rendering of Recent history) in a long-running process
// whose history holds N entries Dream has not read, all but ownEntries of
// them from other sessions. Reports the median and the ratio to the same
// turn over an empty history, measured alternately.
func BenchmarkBeforeUnreadHistory(b *testing.B) {
	const key = "slack:Cbench"
	for _, n := range historySizes {
		b.Run(fmt.Sprintf("%dK", n/1000), func(b *testing.B) {
			s := newSession(key, user("hi"), assistant("hello"), user("again"))
			before := func(dir string, want bool) func() time.Duration {
				store, err := history.Open(dir, history.Options{})
				if err != nil {
					b.Fatal(err)
				}
				c := New(newFakeModel(b), store, Config{ContextWindow: 128000, MaxTokens: 4096}, nil)
				return func() time.Duration {
					start := time.Now()
					p, rep, err := c.Before(context.Background(), s, Prompt{Fixed: "You are a helpful assistant."})
					took := time.Since(start)
					if err != nil || rep.Rounds != 0 || want != (p.History != "") {
						b.Fatal(rep, err)
					}
					return took
				}
			}
			dir := b.TempDir()
			writeBenchHistory(b, dir, n, key, 0)
			turn, emptyTurn := before(dir, true), before(b.TempDir(), false)
			turn() // the process's first read, untimed
			emptyTurn()
			var took, base []time.Duration
			for b.Loop() {
				took = append(took, turn())
				base = append(base, emptyTurn())
			}
			slices.Sort(took)
			slices.Sort(base)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1000, "p50-µs")
			b.ReportMetric(float64(base[len(base)/2].Nanoseconds())/1000, "empty-p50-µs")
			b.ReportMetric(float64(took[len(took)/2])/float64(base[len(base)/2]), "x-empty")
		})
	}
}
