package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// BenchmarkClaim: what a conversation's claim costs a turn — its claim
// (the advisory lock and the claims row, one round trip on the process's
// own connection) and its release — by one process alone and by three
// processes claiming from the same 50 conversations at once (a claim
// another holds fails fast, and counts). p50 and p99 of a claim, in µs.
//
//	DREAMGATE_TEST_POSTGRES=… go test -run '^$' -bench BenchmarkClaim ./store/postgres/
func BenchmarkClaim(b *testing.B) {
	for _, procs := range []int{1, 3} {
		b.Run(fmt.Sprintf("processes=%d", procs), func(b *testing.B) {
			dsn := pgtest.DSN(b)
			ps := make([]*postgres.Process, procs)
			for i := range ps {
				db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(db.Close)
				if ps[i], err = db.Join(context.Background(), postgres.ProcessInfo{Host: "bench", PID: i}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(ps[i].Close)
			}
			var mu sync.Mutex
			var claims []time.Duration
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N/procs + 1
			for i, p := range ps {
				wg.Go(func() {
					var mine []time.Duration
					for n := range per {
						key := fmt.Sprintf("slack:D%02d", (n*7+i*13)%50)
						start := time.Now()
						ok, _, err := p.Claim(key)
						mine = append(mine, time.Since(start))
						if err != nil {
							b.Error(err)
							return
						}
						if ok {
							if err := p.Release(key); err != nil {
								b.Error(err)
								return
							}
						}
					}
					mu.Lock()
					claims = append(claims, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(claims)
			b.ReportMetric(float64(claims[len(claims)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(claims[len(claims)*99/100].Microseconds()), "p99-µs")
		})
	}
}
