package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkChatOneShot runs `dreamgate chat -m hi`, built as `make build`
// does, end to end against a fake model that answers at once (process
// start, config, session, prompt, model call, reply, exit), alternating
// with its floor, testdata/bareclient built the same way: a Go program
// that starts and posts the request body dreamgate sent to the same fake.
// It reports both medians, their ratio (the goal: at most 1.3) and
// dreamgate's peak RSS.
func BenchmarkChatOneShot(b *testing.B) {
	h := newHarness(b)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	dg, bare := buildShipped(b, "."), buildShipped(b, "./testdata/bareclient")
	bodyFile := filepath.Join(h.home, "request.json")
	args := []string{"--config", h.cfgPath, "chat", "-m", "hi"}
	timeProgram(b, h.home, dg, args...) // the first run creates the workspace
	// Every run starts from the session this first turn left: start-up is
	// measured here, a growing session by the session benchmarks.
	sessions := filepath.Join(h.state, "sessions")
	snapshot := filepath.Join(h.home, "sessions-after-one-turn")
	if err := os.CopyFS(snapshot, os.DirFS(sessions)); err != nil {
		b.Fatal(err)
	}
	var dgT, floor []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := os.RemoveAll(sessions); err != nil {
			b.Fatal(err)
		}
		if err := os.CopyFS(sessions, os.DirFS(snapshot)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// The request of the previous run: the same as the next.
		reqs := h.llm.Requests()
		if err := os.WriteFile(bodyFile, reqs[len(reqs)-1].Body, 0o600); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, timeProgram(b, h.home, bare, h.llm.URL(), "sk-test-secret", bodyFile))
		dgT = append(dgT, timeProgram(b, h.home, dg, args...))
	}
	b.StopTimer()
	// Peak memory on a run of its own: sampling it costs CPU that the
	// timed runs must not share.
	rss := peakRSSKB(b, h.home, dg, args...)
	d, f := percentile(dgT, 50), percentile(floor, 50)
	b.ReportMetric(ms(d), "p50-ms")
	b.ReportMetric(ms(f), "floor-p50-ms")
	b.ReportMetric(float64(d)/float64(f), "ratio")
	b.ReportMetric(float64(rss)/1024, "maxRSS-MB")
}

// BenchmarkGatewayStart measures from process start to the first answer of
// GET /healthz, and the idle resident memory once it is up.
func BenchmarkGatewayStart(b *testing.B) {
	h := newHarness(b)
	var ready []time.Duration
	var idleRSS int64
	client := &http.Client{Timeout: time.Second}
	for range b.N {
		addr := freeAddr(b)
		h.set("gateway.healthAddr", addr)
		cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway")
		cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		url := "http://" + addr + "/healthz"
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := client.Get(url)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				b.Fatal("gateway never answered /healthz")
			}
			time.Sleep(200 * time.Microsecond)
		}
		ready = append(ready, time.Since(start))
		// Idle memory: what a gateway that nobody talks to holds.
		time.Sleep(300 * time.Millisecond)
		idleRSS = max(idleRSS, procStatusKB(cmd.Process.Pid, "VmRSS:"))
		_ = cmd.Process.Signal(syscall.SIGTERM)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
		}
		cancel()
	}
	b.ReportMetric(float64(percentile(ready, 50).Microseconds())/1000, "ready-p50-ms")
	b.ReportMetric(float64(idleRSS)/1024, "idleRSS-MB")
}

// procStatusKB reads one kB field (VmRSS:, VmHWM:) of a running process's
// /proc status; 0 when it cannot.
func procStatusKB(pid int, field string) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
