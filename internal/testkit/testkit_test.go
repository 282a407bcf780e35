package testkit

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteFileCreatesDirectoriesAndReadFileReadsBack(t *testing.T) {
	dir := t.TempDir()
	WriteFile(t, dir, "memory/sub/MEMORY.md", "# Memory\n")
	if got := ReadFile(t, dir, "memory/sub/MEMORY.md"); got != "# Memory\n" {
		t.Errorf("ReadFile = %q", got)
	}
	WriteFile(t, dir, "memory/sub/MEMORY.md", "x")
	if got := ReadFile(t, dir, "memory/sub/MEMORY.md"); got != "x" {
		t.Errorf("after overwrite ReadFile = %q", got)
	}
}

func TestLogRecorderKeepsRecordsFromManyGoroutines(t *testing.T) {
	var r LogRecorder
	seen := make(chan Record, 100)
	r.OnRecord(func(rec Record) { seen <- rec })
	log := r.Logger()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if i%2 == 0 {
				log.Warn("disk is slow", "n", i)
			} else {
				log.Info("disk is slow now", "n", i)
			}
		})
	}
	wg.Wait()
	if n := len(r.Records()); n != 20 || len(seen) != 20 {
		t.Fatalf("kept %d records, told of %d; want 20", n, len(seen))
	}
	if n := r.Count(slog.LevelWarn, "disk is slow"); n != 10 {
		t.Errorf("Count(warn, exact) = %d, want 10", n)
	}
	if n := len(r.Find(slog.LevelInfo, "disk is slow")); n != 20 {
		t.Errorf("Find(info and above, contains) = %d, want 20", n)
	}
	if f := r.Find(slog.LevelWarn, "slow"); len(f) != 10 || f[0].Attrs["n"] == "" {
		t.Errorf("Find(warn and above) = %+v, want 10 records carrying n", f)
	}
	r.Reset()
	if n := len(r.Records()); n != 0 {
		t.Errorf("after Reset %d records", n)
	}
}

func TestBufferWaitForSeesALaterWrite(t *testing.T) {
	var b Buffer
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for _, s := range []string{"starting\n", "ready on 127.0.0.1\n"} {
			if _, err := b.Write([]byte(s)); err != nil {
				t.Error(err)
			}
		}
	}()
	b.WaitFor(t, "ready on")
	<-wrote
	if got := b.String(); got != "starting\nready on 127.0.0.1\n" {
		t.Errorf("String = %q", got)
	}
}

func TestFencesBalanced(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"plain", true},
		{"```go\nx := 1\n```\n", true},
		{"```go\nx := 1\n", false},
		{"text\n  ```\ncode\n  ```", true},
		{"inline ``` is not a fence", true},
	}
	for _, tt := range tests {
		if got := FencesBalanced(tt.text); got != tt.want {
			t.Errorf("FencesBalanced(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestClockMovesOnlyWhenAdvanced(t *testing.T) {
	start := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Errorf("after Advance Now = %v, want %v", c.Now(), want)
	}
}

// A timer fires when the clock is moved to its time, not before, in
// order of their times; a stopped one never; a reset one from the time
// of the reset.
func TestClockTimersFireWhenAdvanced(t *testing.T) {
	c := NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var fired []string
	c.AfterFunc(20*time.Second, func() { fired = append(fired, "b") })
	c.AfterFunc(10*time.Second, func() { fired = append(fired, "a") })
	stopped := c.AfterFunc(5*time.Second, func() { fired = append(fired, "stopped") })
	reset := c.AfterFunc(5*time.Second, func() { fired = append(fired, "reset") })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop did not report the timer armed once")
	}
	c.Advance(4 * time.Second)
	reset.Reset(30 * time.Second) // now due at 34s
	c.Advance(15 * time.Second)
	if got := strings.Join(fired, " "); got != "a" {
		t.Fatalf("at 19s fired %q, want a", got)
	}
	c.Advance(time.Hour)
	if got := strings.Join(fired, " "); got != "a b reset" || c.Armed() != 0 {
		t.Errorf("fired %q with %d armed, want a b reset and none", got, c.Armed())
	}
}
