package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/pgtest"
)

// Benchmarks of several gateways on one PostgreSQL, through the built
// binary, the Slack fake and a fake model per gateway (the scenarios'
// machinery, scenario_*_test.go): what sharing the conversations costs
// and gives, and how long a dead gateway's conversations wait.
//
//	DREAMGATE_TEST_POSTGRES=… go test -run '^$' -bench 'BenchmarkProcesses|BenchmarkTakeover' -benchtime 3x ./cmd/dreamgate/
//
// (make test-postgres's cluster: .ci/postgres run env … go test …)

// benchT runs a scenario's steps in a benchmark.
type benchT struct{ testing.TB }

func (b benchT) Check(err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}

// benchScenario is a scenario of the benchmark's own: a schema, the Slack
// fake; its gateways are stopped when the benchmark ends.
func benchScenario(b *testing.B) *scenario {
	server := pgtest.Server(b)
	schema := "bench_" + randomID()
	if err := pgExec(server, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pgExec(server, "DROP SCHEMA "+schema+" CASCADE") })
	dsn, err := pgtest.WithSearchPath(server, schema)
	if err != nil {
		b.Fatal(err)
	}
	s := &scenario{work: b.TempDir(), dsn: dsn, gateways: map[string]*scenarioGateway{}, models: map[string]*scenarioModel{}}
	s.startSlack()
	b.Cleanup(s.stopAll)
	return s
}

// BenchmarkProcesses: messages per second answered by 1, 2 and 3 gateways
// sharing one Slack app's 50 DMs on one PostgreSQL, 500 messages a round
// (each person's next message once the last was accepted), against the
// fake model, which answers at once: the gateways' and the database's own
// cost, which is what more processes share. On a 2-core machine the
// processes, PostgreSQL and the fakes share the cores.
func BenchmarkProcesses(b *testing.B) {
	const msgs, convs = 500, 50
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("gateways=%d", n), func(b *testing.B) {
			s, bt := benchScenario(b), benchT{b}
			for i := range n {
				s.startGateway(bt, fmt.Sprintf("g%d", i), nil)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			bt.Check(s.slack.WaitLiveConnections(ctx, n))
			round := 0
			for b.Loop() {
				s.converse(ctx, bt, msgs, convs, round*msgs)
				round++
				s.waitAnswered(ctx, bt, round*msgs)
			}
			b.ReportMetric(float64(round*msgs)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkTakeover: from a gateway's kill -9, with its turns in its
// model, to the last of its conversations answered by the other, at the
// default lease (15 s) and at 3 s. The database notices a killed
// process's closed connections at once, so the lease hardly shows; it
// bounds a silent host's.
func BenchmarkTakeover(b *testing.B) {
	for _, lease := range []int{15, 3} {
		b.Run(fmt.Sprintf("lease=%ds", lease), func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				s, bt := benchScenario(b), benchT{b}
				set := []string{fmt.Sprintf("store.leaseSeconds=%d", lease)}
				s.startGateway(bt, "a", set)
				s.startGateway(bt, "b", set)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				bt.Check(s.slack.WaitLiveConnections(ctx, 2))
				a := s.models["a"]
				a.mu.Lock()
				a.hold = make(chan struct{})
				a.mu.Unlock()
				s.converse(ctx, bt, 100, 50, 0)
				if !a.waitFor(time.Minute, func() bool { return a.held > 0 }) {
					b.Fatal("a's model held no turn")
				}
				b.StartTimer()
				start := time.Now()
				s.gateways["a"].stop(syscall.SIGKILL)
				s.waitAnswered(ctx, bt, 100)
				took += time.Since(start)
				cancel()
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "takeover-s")
		})
	}
}
