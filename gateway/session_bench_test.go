package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/gateway/session/sessiontest"
	"github.com/dreamgate/dreamgate/history"
)

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
