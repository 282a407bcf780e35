package dream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// every is a schedule firing d after each run time; cron's own parser has a
// one-second floor, which would make these tests slow.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// TestSchedulerSkipsWhileRunningAndStopWaits: a run still going when the
// schedule fires again makes that firing skip (no overlap, logged), Stop
// cancels the running job's context and returns only after it has
// returned.
func TestSchedulerSkipsWhileRunningAndStopWaits(t *testing.T) {
	logs := &testkit.LogRecorder{}
	skipped := make(chan struct{}, 100)
	logs.OnRecord(func(r testkit.Record) {
		if strings.Contains(r.Message, "skipped: the previous one is still running") {
			select {
			case skipped <- struct{}{}:
			default: // enough seen; never block cron's goroutines
			}
		}
	})
	var starts, running, maxRunning atomic.Int32
	var finished atomic.Bool
	started, sawCancel, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	job := func(ctx context.Context) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		if starts.Add(1) > 1 {
			return
		}
		close(started)
		<-ctx.Done()
		close(sawCancel)
		<-release
		finished.Store(true)
	}
	s := newSchedulerWith(every(10*time.Millisecond), time.UTC, job, slog.New(logs))
	s.Start()
	<-started
	<-skipped // the schedule fired during the run and was skipped
	<-skipped

	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(t.Context()) }()
	<-sawCancel
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the job was still running", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !finished.Load() {
		t.Error("Stop returned before the running job finished")
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("job started %d times, want 1 (the others must skip)", n)
	}
	if m := maxRunning.Load(); m != 1 {
		t.Errorf("max concurrent runs = %d", m)
	}
	if !s.Next().IsZero() {
		t.Error("Next after Stop is not zero")
	}
}

func TestSchedulerStopBoundedByContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var once atomic.Bool
	s := newSchedulerWith(every(10*time.Millisecond), time.UTC, func(context.Context) {
		if once.CompareAndSwap(false, true) {
			close(started)
			<-release // ignores cancellation
		}
	}, nil)
	defer close(release)
	s.Start()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Stop(ctx); err == nil {
		t.Error("Stop with an ended context returned nil while a job was running")
	}
}

// TestSchedulerRunsDreams: the scheduled job is a cron-triggered Dream.
func TestSchedulerRunsDreams(t *testing.T) {
	e := newEnv(t)
	e.hist.seed(t, 0, 3, func(int) string { return "- x" })
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("[SKIP]") })
	finished := make(chan struct{}, 1)
	e.logs.OnRecord(func(r testkit.Record) {
		if r.Message == "dream finished" {
			select {
			case finished <- struct{}{}:
			default:
			}
		}
	})
	d := e.dreamer(Config{})
	s := newDreamScheduler(every(10*time.Millisecond), time.UTC, d, slog.New(e.logs))
	if next := d.Status(AllScopes()).Next; next.IsZero() {
		t.Error("Status.Next is zero with a scheduler")
	}
	s.Start()
	<-finished
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := d.Status(AllScopes())
	if st.Last == nil || st.Last.Trigger != TriggerCron {
		t.Fatalf("last run = %+v", st.Last)
	}
	if e.hist.cursor(t) != 3 {
		t.Errorf("cursor = %d, want 3", e.hist.cursor(t))
	}
}

func TestNewScheduler(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	tests := []struct {
		spec, tz string
		ok       bool
	}{
		{"0 */2 * * *", "UTC", true},
		{"@daily", "", true},
		{"@every 6h", "Local", true},
		{"CRON_TZ=America/New_York 0 9 * * *", "UTC", true},
		{"30 8 * * *", "Asia/Tokyo", true},
		{"* * * * * *", "UTC", false},
		{"61 * * * *", "UTC", false},
		{"", "UTC", false},
		{"0 * * * *", "Mars/Olympus_Mons", false},
	}
	for _, tc := range tests {
		t.Run(tc.spec+" "+tc.tz, func(t *testing.T) {
			s, err := NewScheduler(tc.spec, tc.tz, d, nil)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				return
			}
			defer s.Stop(t.Context())
			if s.Next().IsZero() || !s.Next().After(time.Now()) {
				t.Errorf("Next = %v", s.Next())
			}
		})
	}
	s, err := NewScheduler("30 8 * * *", "Asia/Tokyo", d, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if n := s.Next().In(tokyo); n.Hour() != 8 || n.Minute() != 30 {
		t.Errorf("Next in Tokyo = %v", n)
	}
	if !d.Status(AllScopes()).Next.Equal(s.Next()) {
		t.Errorf("Status.Next = %v, scheduler Next = %v", d.Status(AllScopes()).Next, s.Next())
	}
}

// ParseSchedule checks a spec in its zone and says which of the two is
// wrong; Next answers in that zone.
func TestParseSchedule(t *testing.T) {
	s, err := ParseSchedule("0 */2 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 4, 3, 9, 30, 0, 0, time.UTC) // 11:30 in Berlin
	if next := s.Next(at); next.Format("15:04 MST") != "12:00 CEST" || !next.After(at) {
		t.Errorf("Next = %v", next)
	}
	for _, tc := range []struct{ spec, zone, field string }{
		{"0 */2 * * *", "Mars/Olympus", "timezone"},
		{"every day", "UTC", "cron"},
	} {
		_, err := ParseSchedule(tc.spec, tc.zone)
		var se *ScheduleError
		if !errors.As(err, &se) || se.Field != tc.field || se.Reason == "" {
			t.Errorf("ParseSchedule(%q, %q) = %v, want a ScheduleError on %s", tc.spec, tc.zone, err, tc.field)
		}
	}
}
