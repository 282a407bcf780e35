package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// Start-up is measured against a floor built in the same run from
// testdata: a Go program doing the least the command must do. On a shared
// machine the ratio of medians is far steadier than absolute times.

var buildMu sync.Mutex

// buildShipped builds a main package as `make build` builds dreamgate
// (static, stripped), beside the test binary, once per test run: pkg "."
// is dreamgate itself, "./testdata/<name>" a floor. Start-up depends on how
// a binary is built, so what is measured is what users run, and the floors
// are built the same way.
func buildShipped(b *testing.B, pkg string) string {
	b.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	name := "shipped-" + filepath.Base(pkg)
	if pkg == "." {
		name = "shipped-dreamgate"
	}
	path := filepath.Join(filepath.Dir(binPath), name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", path, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return path
}

// peakRSSKB runs a program once and returns its peak resident memory, read
// from /proc while it runs (see harness.run for why not rusage).
func peakRSSKB(b *testing.B, home, path string, args ...string) int64 {
	b.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var hwm int64
	t := time.NewTicker(200 * time.Microsecond)
	defer t.Stop()
	for {
		hwm = max(hwm, procStatusKB(cmd.Process.Pid, "VmHWM:"))
		select {
		case err := <-exited:
			if err != nil {
				b.Fatalf("%s %v: %v", filepath.Base(path), args, err)
			}
			return hwm
		case <-t.C:
		}
	}
}

// timeProgram runs one program to its end with a clean environment and
// returns how long it took; a failure ends the benchmark.
func timeProgram(b *testing.B, home, path string, args ...string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(path), args, err, errb.String())
	}
	return elapsed
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkHelp runs `dreamgate --help` (built as `make build` does), alternating with testdata/hello, a
// Go program that prints a line and exits, and reports both medians and
// their ratio. What is left above the floor is the cost of starting this
// binary: package initialisation and paging it in.
func BenchmarkHelp(b *testing.B) {
	home := b.TempDir()
	dg, hello := buildShipped(b, "."), buildShipped(b, "./testdata/hello")
	var dgT, floor []time.Duration
	b.ResetTimer() // not the builds
	for range b.N {
		floor = append(floor, timeProgram(b, home, hello))
		dgT = append(dgT, timeProgram(b, home, dg, "--help"))
	}
	d, f := percentile(dgT, 50), percentile(floor, 50)
	b.ReportMetric(ms(d), "p50-ms")
	b.ReportMetric(ms(f), "floor-p50-ms")
	b.ReportMetric(float64(d)/float64(f), "ratio")
}

// BenchmarkModelBurst sends bursts of 64 model calls at once through the
// model as the gateway wires it (maxConcurrentTurns 8) to a fake that
// answers at once, on a warm connection pool (a gateway that has been
// running), and reports the share of calls that opened a new connection.
func BenchmarkModelBurst(b *testing.B) {
	const burstSize, turns = 64, 8
	h := newHarness(b)
	h.set("gateway.maxConcurrentTurns", turns)
	// Warm-up: the first answers wait until turns calls are in, so the pool
	// holds exactly turns connections, as after a busy minute.
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply {
		if _, err := h.llm.WaitRequests(b.Context(), turns); err != nil {
			b.Error(err)
		}
		return llmtest.Text("hello")
	})
	model := h.app().limited()
	fire := func(n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi " + strconv.Itoa(i)}}}
				if _, err := model.Chat(b.Context(), req); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	fire(turns)
	warm := h.llm.Connections()
	b.ResetTimer()
	for range b.N {
		fire(burstSize)
	}
	b.StopTimer()
	calls := b.N * burstSize
	b.ReportMetric(100*float64(h.llm.Connections()-warm)/float64(calls), "new-conn-%")
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
}
