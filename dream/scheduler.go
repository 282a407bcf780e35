package dream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones also on images without zoneinfo

	"github.com/robfig/cron/v3"
)

// Scheduler runs a Dreamer on a cron schedule. A run still going when the
// next one is due makes that one skip (never overlap, never queue); a
// /dream or CLI run at the same time is refused by the Dreamer's own lock.
type Scheduler struct {
	c      *cron.Cron
	sched  cron.Schedule
	id     cron.EntryID
	loc    *time.Location
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	stopped bool
}

// NewScheduler parses spec (standard 5 fields, or a descriptor such as
// @daily or @every 6h; a CRON_TZ= prefix overrides timezone) in timezone
// (an IANA name; "" means UTC, "Local" the machine's) and prepares a
// scheduler that calls d.Run(ctx, TriggerCron, nil). Nothing runs before
// Start. It also makes d.Status report the next run.
func NewScheduler(spec, timezone string, d *Dreamer, logger *slog.Logger) (*Scheduler, error) {
	if d == nil {
		return nil, errors.New("dream scheduler: no dreamer")
	}
	s, err := ParseSchedule(spec, timezone)
	if err != nil {
		return nil, err
	}
	return newDreamScheduler(s.sched, s.loc, d, logger), nil
}

// Schedule is a dream.cron spec parsed in its time zone; cron's own types
// stay inside this package.
type Schedule struct {
	sched cron.Schedule
	loc   *time.Location
}

// ScheduleError is a dream.cron spec or time zone that cannot be used.
type ScheduleError struct {
	// Field is "cron" or "timezone"; Value what was given; Reason why it
	// cannot be used.
	Field, Value, Reason string
}

func (e *ScheduleError) Error() string {
	return fmt.Sprintf("dream %s %q: %s", e.Field, e.Value, e.Reason)
}

// ParseSchedule checks a dream.cron spec (standard 5 fields, or a
// descriptor such as @daily or @every 6h; a CRON_TZ= prefix overrides
// timezone) in timezone (an IANA name; "" means UTC, "Local" the
// machine's). Its error is a *ScheduleError.
func ParseSchedule(spec, timezone string) (Schedule, error) {
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return Schedule{}, &ScheduleError{Field: "timezone", Value: timezone, Reason: "unknown time zone"}
	}
	sched, err := cron.ParseStandard(strings.TrimSpace(spec))
	if err != nil {
		return Schedule{}, &ScheduleError{Field: "cron", Value: spec, Reason: err.Error()}
	}
	return Schedule{sched: sched, loc: loc}, nil
}

// Next is the first time the schedule fires after t, in its time zone.
func (s Schedule) Next(t time.Time) time.Time { return s.sched.Next(t.In(s.loc)) }

// newDreamScheduler runs d on any schedule (tests use a fast one).
func newDreamScheduler(sched cron.Schedule, loc *time.Location, d *Dreamer, logger *slog.Logger) *Scheduler {
	job := func(ctx context.Context) {
		// The outcome is logged by Run; a refusal (a /dream is running)
		// is routine.
		_, _ = d.Run(ctx, TriggerCron, AllScopes(), nil)
	}
	s := newSchedulerWith(sched, loc, job, logger)
	d.setNext(s.Next)
	return s
}

// newSchedulerWith takes a parsed (or, in tests, hand-made) schedule.
func newSchedulerWith(sched cron.Schedule, loc *time.Location, job func(context.Context), logger *slog.Logger) *Scheduler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{sched: sched, loc: loc, log: logger, ctx: ctx, cancel: cancel}
	chainLog := cronLogger{log: logger, level: slog.LevelInfo}
	s.c = cron.New(
		cron.WithLocation(loc),
		cron.WithLogger(cronLogger{log: logger, level: slog.LevelDebug}),
		cron.WithChain(cron.Recover(chainLog), cron.SkipIfStillRunning(chainLog)),
	)
	s.id = s.c.Schedule(sched, cron.FuncJob(func() { job(s.ctx) }))
	return s
}

// Start begins the schedule. It does not wait for anything; calling it again
// or after Stop does nothing.
func (s *Scheduler) Start() {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.c.Start()
	s.mu.Unlock()
	s.log.Info("dream schedule started", "next", s.Next())
}

// Next is when the next scheduled run is due; zero after Stop.
func (s *Scheduler) Next() time.Time {
	s.mu.Lock()
	started, stopped := s.started, s.stopped
	s.mu.Unlock()
	if stopped {
		return time.Time{}
	}
	if started {
		if next := s.c.Entry(s.id).Next; !next.IsZero() {
			return next
		}
	}
	return s.sched.Next(time.Now().In(s.loc))
}

// Stop ends the schedule, cancels a running Dream's context and waits for it
// to return (a cancelled Dream stops at its next model call, undoing its
// partial edits; it is not counted against its batch). It returns ctx's
// error if ctx ends first. Calling it more than once is fine.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	done := s.c.Stop().Done()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop dream scheduler: %w", ctx.Err())
	}
}

// cronLogger is cron's logger over slog. cron's own bookkeeping goes to
// debug; the chain's "skip" and recovered panics are worth seeing.
type cronLogger struct {
	log   *slog.Logger
	level slog.Level
}

func (l cronLogger) Info(msg string, kv ...any) {
	if msg == "skip" {
		l.log.Log(context.Background(), l.level, "dream run skipped: the previous one is still running")
		return
	}
	l.log.Log(context.Background(), l.level, "dream cron: "+msg, kv...)
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("dream cron: "+msg, append(kv, "err", err)...)
}
