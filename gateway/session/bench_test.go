package session

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// BenchmarkNewSession is what a new conversation (a new Slack thread) costs
// the sessions store: Get of an unknown key and the first Append, which
// creates the message file; no metadata is written and nothing is synced.
// Each iteration also appends to a session whose file exists, so
// x-existing (their ratio) and the CPU figures are from the same run: the
// difference is the file's creation, an inode allocation in the kernel.
func BenchmarkNewSession(b *testing.B) {
	st, err := NewStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	old, _ := st.Get("slack:C1:old")
	msg := llm.Message{Role: llm.RoleUser, Content: "<@UBOT> a question in a new thread"}
	if err := old.Append(msg); err != nil {
		b.Fatal(err)
	}
	var fresh, existing, freshCPU, existingCPU time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0, c0 := time.Now(), cpuTime()
		s, err := st.Get(fmt.Sprint("slack:C1:", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Append(msg); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime()
		if err := old.Append(msg); err != nil {
			b.Fatal(err)
		}
		fresh, freshCPU = fresh+t1.Sub(t0), freshCPU+c1-c0
		existing, existingCPU = existing+time.Since(t1), existingCPU+cpuTime()-c1
		st.Evict(s) // a long burst does not hold every file open
	}
	b.StopTimer()
	b.ReportMetric(float64(fresh.Microseconds())/float64(b.N), "new-µs")
	b.ReportMetric(float64(freshCPU.Microseconds())/float64(b.N), "new-cpu-µs")
	b.ReportMetric(float64(existingCPU.Microseconds())/float64(b.N), "existing-cpu-µs")
	b.ReportMetric(float64(fresh)/float64(existing), "x-existing")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
