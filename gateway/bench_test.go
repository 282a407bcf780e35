package gateway

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/gateway/session/sessiontest"
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
	}, nil)
	useRealConsolidator(b, env, 128000, 4096)

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

// BenchmarkLongSessionColdTurn is what a process's first turn in a long
// session costs the gateway before the model call, as a one-shot `chat -m`
// or a gateway that evicted the session pays it: load the session from
// disk, run the budget check, build the prompt's replay. Sessions of 1K,
// 10K and 100K messages (all but 10 archived) each run beside an empty
// session in the same loop, so x-empty (their time ratio) is free of the
// machine's load; held-B is the heap the loaded session keeps.
func BenchmarkLongSessionColdTurn(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			sessions := filepath.Join(dir, "sessions")
			sessiontest.WriteLong(b, sessions, "test:long", n, 10)
			hist, err := history.Open(filepath.Join(dir, "memory"), history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			coldTurn(b, sessions, hist, "test:empty") // warm: page cache, lazy tables
			coldTurn(b, sessions, hist, "test:long")
			var long, empty time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				coldTurn(b, sessions, hist, "test:empty")
				mid := time.Now()
				coldTurn(b, sessions, hist, "test:long")
				long += time.Since(mid)
				empty += mid.Sub(start)
			}
			b.StopTimer()
			b.ReportMetric(float64(long.Microseconds())/float64(b.N)/1000, "ms/turn")
			b.ReportMetric(float64(empty.Microseconds())/float64(b.N)/1000, "empty-ms/turn")
			b.ReportMetric(float64(long)/float64(empty), "x-empty")
			b.ReportMetric(float64(heldBySession(b, sessions, "test:long")), "held-B")
		})
	}
}

// coldTurn loads key from dir in a new store and builds its next prompt
// with a new consolidator, as a fresh process does.
func coldTurn(b *testing.B, dir string, hist *history.Store, key string) {
	st, err := session.NewStore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Get(key)
	if err != nil {
		b.Fatal(err)
	}
	cons := consolidator.New(nil, hist, consolidator.Config{ContextWindow: 128000, MaxTokens: 4096}, nil)
	p, _, err := cons.Before(context.Background(), sess, consolidator.Prompt{Fixed: "You are a test."})
	if err != nil {
		b.Fatal(err)
	}
	if len(replay(sess, sess.LastConsolidated()-p.Kept)) == 0 && sess.Len() > 0 {
		b.Fatal("empty replay")
	}
}

// heldBySession is the live heap a loaded session adds: the mean over
// several loads held at once, so that small figures are not lost in the
// noise of the benchmark's own allocations.
func heldBySession(b *testing.B, dir, key string) int64 {
	const copies = 16
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	// One process holds a conversation once (its lock): each copy is
	// loaded from a directory of its own, whose message files are links to
	// the same file (a load only reads it).
	dirs := make([]string, copies)
	for i := range dirs {
		dirs[i] = b.TempDir()
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			from, to := filepath.Join(dir, e.Name()), filepath.Join(dirs[i], e.Name())
			if strings.HasSuffix(e.Name(), ".jsonl") {
				err = os.Link(from, to)
			} else if raw, rerr := os.ReadFile(from); rerr != nil {
				err = rerr
			} else {
				err = os.WriteFile(to, raw, 0o600)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	before := live()
	held := make([]*session.Session, copies)
	for i := range held {
		st, err := session.NewStore(dirs[i], nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if held[i], err = st.Get(key); err != nil {
			b.Fatal(err)
		}
	}
	n := (live() - before) / copies
	runtime.KeepAlive(held)
	return n
}
