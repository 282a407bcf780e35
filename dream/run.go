package dream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// Dreamer runs Dreams for one workspace. Its methods are safe for concurrent
// use; Run and Restore are single-flight across goroutines and processes.
type Dreamer struct {
	cfg   Config
	model Model
	hist  History
	repo  Repo
	files *workspace.Root // nil: opened per run
	mem   *memory.Memory
	log   *slog.Logger
	now   func() time.Time
	hook  func(point string)
	obs   Observer // nil: none
	count TokenCounter
	// ledger holds Dream's progress, and the Dream lock its writers take.
	ledger *Ledger
	// leases, when set, lease each scope's Dream across processes
	// (lease.go).
	leases ScopeLeases

	mu   sync.Mutex
	next func() time.Time // set by a Scheduler
}

// Ledger is the Dreamer's record of Dream's progress: what /status and
// /metrics read.
func (d *Dreamer) Ledger() *Ledger { return d.ledger }

// Run makes one Dream now, over the memory scopes scopes chooses: it
// visits the scopes that have unread history entries, the one with the
// oldest first, one batch of a scope's entries at a time, round-robin
// while unread entries remain (up to Config.MaxBatchesPerRun batches and
// Config.MaxTokensPerRun tokens for the whole run): read the scope's next
// batch, analyse it with the scope's files, apply the findings with file
// tools confined to the scope's folder, commit the scope's files, advance
// the scope's cursor. A scope whose batch fails waits for the next run;
// the others go on (unless the model is unreachable or the run is
// cancelled, which would fail them all). Then the cursors of the scopes
// with nothing unread move up to the end of the history, so the frontier
// (memory/.dream_cursor) never waits for a quiet scope, and the history
// is compacted. It never waits for another Dream: when one is running
// (here or in another process) it returns a *BusyError at once. Each batch
// is bounded by Config.Timeout.
//
// progress, when non-nil, is called at phase boundaries with a short text
// for a chat ("Dreaming: reading 14 history entries…").
//
// The Report is filled in whatever happens, with a ScopeReport for each
// scope visited. err is nil when every batch attempted completed or
// nothing was new; otherwise it is a *BusyError, or the *RunError
// (ErrRunFailed, ErrBatchSkipped) of the last batch that did not complete,
// whose Reason is also in the Report, with the whole chain for the log.
func (d *Dreamer) Run(ctx context.Context, trigger string, scopes Scopes, progress func(string)) (Report, error) {
	start := d.now()
	rep := Report{Trigger: trigger, Started: start, MaxFailures: d.cfg.MaxFailures}
	defer func() { d.observe(rep) }()
	h, recovered, err := d.open()
	if h == nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			d.log.Info("dream refused: already running", "trigger", trigger, "elsewhere", busy.Elsewhere)
			return rep, err
		}
		rep.Outcome, rep.Reason = OutcomeFailed, "the Dream could not take its lock or read its progress"
		d.log.Error("dream could not start", "trigger", trigger, "err", err)
		return rep, &RunError{Reason: rep.Reason, Err: err}
	}
	defer h.end()
	if rep.Recovered = recovered; err != nil {
		// The interrupted run's edits stay uncommitted and the intent in
		// place: going on would commit them as hand edits.
		rep.Outcome, rep.Reason = OutcomeFailed, "the edits of an interrupted Dream could not be recorded"
		rep.Duration = d.now().Sub(start)
		d.saveLastRun(h, &rep, scopes, nil)
		d.log.Error("dream could not recover an interrupted run", "trigger", trigger, "err", err)
		return rep, &RunError{Reason: rep.Reason, Err: err}
	}
	err = d.drain(ctx, h, scopes, progress, &rep)
	d.deepDreams(ctx, h, scopes, &rep)
	quiet := d.settle(h, scopes, &rep)
	d.compact(&rep)
	d.pack(&rep)
	rep.Duration = d.now().Sub(start)
	rep.Usage.Calls = rep.Calls
	d.saveLastRun(h, &rep, scopes, quiet)

	attrs := []any{"trigger", trigger, "outcome", rep.Outcome, "entries", rep.Entries,
		"first", rep.First, "last", rep.Last, "batches", rep.Batches, "backlog", rep.Backlog,
		"findings", rep.Findings, "left", rep.Left, "changes", rep.Changes,
		"commit", rep.Commit, "calls", rep.Calls, "prompt_tokens", rep.Usage.PromptTokens,
		"completion_tokens", rep.Usage.CompletionTokens, "duration", rep.Duration}
	if len(rep.Scopes) > 1 {
		attrs = append(attrs, "scopes", len(rep.Scopes))
	}
	switch rep.Outcome {
	case OutcomeFailed, OutcomePartial:
		d.log.Warn("dream failed", append(attrs, "failures", rep.Failures, "err", err)...)
	case OutcomeSkipped:
		// run.skip logged the warning with the batch; this is the summary.
		d.log.Info("dream finished", append(attrs, "err", err)...)
	default:
		d.log.Info("dream finished", attrs...)
	}
	return rep, err
}

// drain runs the batches of a Run: the chosen scopes with unread entries,
// the oldest unread first, one batch each in turn. It returns the error of
// the last batch that did not complete (nil when none).
func (d *Dreamer) drain(ctx context.Context, h *held, scopes Scopes, progress func(string), rep *Report) error {
	bl, _, err := d.ledger.backlogs(&h.rec)
	if err != nil {
		rep.Outcome = OutcomeFailed
		rep.Reason, rep.PublicReason = "the history could not be read", "the history could not be read"
		return &RunError{Reason: rep.Reason, Err: err}
	}
	var queue []audience.Scope
	for _, b := range bl {
		if scopes.Has(b.Scope) {
			queue = append(queue, b.Scope)
		}
	}
	if len(queue) == 0 {
		rep.Outcome = OutcomeNothingNew
		return nil
	}
	var (
		failed    *Report // the last batch that did not complete
		failedErr error
	)
	for n := 1; len(queue) > 0; n++ {
		scope := queue[0]
		queue = queue[1:]
		if !d.leaseScope(h, scope) {
			continue // another process dreams it
		}
		b := &batch{d: d, h: h, scope: scope, parent: ctx, progress: progress,
			rep: &Report{Trigger: rep.Trigger, Started: d.now(), MaxFailures: d.cfg.MaxFailures}}
		bctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		err := b.do(bctx)
		cancel()
		d.unleaseScope(h)
		rep.add(*b.rep)
		rep.scope(scope).add(*b.rep)
		switch {
		case err == nil && b.rep.Outcome == OutcomeCompleted:
			if d.unread(h, scope) {
				queue = append(queue, scope)
			}
		case err != nil || b.rep.Outcome != OutcomeNothingNew:
			failed, failedErr = b.rep, err
		}
		if stopsAll(ctx, err) || len(queue) == 0 {
			break
		}
		if n >= d.cfg.MaxBatchesPerRun {
			d.log.Info("dream stops draining the backlog: batch limit of the run reached", "batches", n, "scopes_waiting", len(queue))
			break
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d.cfg.Timeout {
			// The caller's deadline (a /dream's) would cut the next batch
			// short, and a cut batch's edits are put back.
			d.log.Info("dream stops draining the backlog: the caller's deadline is near", "left", time.Until(dl).Round(time.Second))
			break
		}
		if used := rep.Usage.PromptTokens + rep.Usage.CompletionTokens; used >= d.cfg.MaxTokensPerRun {
			d.log.Info("dream stops draining the backlog: token limit of the run reached", "tokens", used, "limit", d.cfg.MaxTokensPerRun)
			break
		}
	}
	if failed == nil {
		return nil
	}
	// Another scope's batch may have come after the failure: the run's
	// outcome is still the failure, which someone must read.
	rep.Outcome, rep.Reason, rep.PublicReason = failed.Outcome, failed.Reason, failed.PublicReason
	rep.Failures, rep.Left = failed.Failures, failed.Left
	if failed.Entries > 0 {
		rep.BatchFirst, rep.BatchLast = failed.First, failed.Last
	}
	return failedErr
}

// stopsAll reports whether a batch's failure would fail every other
// scope's batch too: the run was cancelled, or the model is unreachable.
// Any other failure is the scope's own, and the others go on.
func stopsAll(ctx context.Context, err error) bool {
	return ctx.Err() != nil || (err != nil && errors.Is(err, llm.ErrUnavailable))
}

// unread reports whether the scope has entries after its cursor.
func (d *Dreamer) unread(h *held, scope audience.Scope) bool {
	es, err := d.hist.SinceIn(scope, h.scope(scope).Cursor, 1)
	return err == nil && len(es) > 0
}

// settle moves up the cursor of every scope with nothing unread to the end
// of the history, in one ledger write, so that the frontier (the least
// cursor) is held back only by entries some scope has yet to read; it
// also records the scopes with unread entries the ledger did not know yet
// (at the frontier), so the frontier cannot pass them. It fills the
// Report's backlog of the chosen scopes, and returns the chosen scopes
// found with nothing unread.
func (d *Dreamer) settle(h *held, scopes Scopes, rep *Report) (quiet []audience.Scope) {
	bl, last, err := d.ledger.backlogs(&h.rec)
	if err != nil {
		d.log.Warn("dream could not count the unread history", "err", err)
		return nil
	}
	waiting := map[audience.Scope]int{}
	for _, b := range bl {
		waiting[b.Scope] = b.Count
		if scopes.Has(b.Scope) {
			rep.Backlog += b.Count
		}
	}
	for i := range rep.Scopes {
		rep.Scopes[i].Backlog = waiting[rep.Scopes[i].Scope]
	}
	moves := false
	for name, p := range h.rec.Scopes {
		if _, ok := waiting[name]; !ok {
			if scopes.Has(name) {
				quiet = append(quiet, name)
			}
			moves = moves || p.Cursor < last
		}
	}
	for _, b := range bl {
		if _, known := h.rec.Scopes[b.Scope]; !known {
			moves = true
		}
	}
	if !moves {
		return quiet
	}
	if err := h.settle(bl, last); err != nil {
		d.log.Warn("dream progress not saved", "err", err)
	}
	return quiet
}

// compact runs after every attempt; its failure does not fail the run.
func (d *Dreamer) compact(rep *Report) {
	n, err := d.hist.Compact(d.cfg.MaxEntries)
	if err != nil {
		d.log.Warn("dream history compaction failed", "err", err)
		return
	}
	rep.Dropped = n
	if n > 0 {
		d.log.Info("dream compacted history", "dropped", n)
	}
}

// pack keeps the memory repository small over months of Dreams: go-git
// writes every object as its own file and never packs, so after a run that
// committed, the loose objects are packed once there are enough of them.
// Its failure does not fail the run; the objects stay loose and readable.
func (d *Dreamer) pack(rep *Report) {
	if rep.Commit == "" && rep.ManualCommit == "" && rep.Recovered == "" {
		return
	}
	n, err := d.repo.Pack()
	if err != nil {
		d.log.Warn("dream could not pack the memory repository", "err", err)
		return
	}
	if n > 0 {
		d.log.Info("dream packed the memory repository", "objects", n)
	}
}

// saveLastRun records the run's outcome in each scope it is about (for
// Status, also in other processes), in one ledger write: a visited scope
// gets what the run did there, a chosen scope found with nothing unread
// (quiet) that nothing was new, and a run that stopped before reading
// anything its outcome in every chosen scope the ledger knows. A scope
// with unread entries the run did not reach keeps its last run.
func (d *Dreamer) saveLastRun(h *held, rep *Report, scopes Scopes, quiet []audience.Scope) {
	lastOf := func(r *Report) *LastRun {
		return &LastRun{
			When: rep.Started, Trigger: rep.Trigger, Outcome: r.Outcome, Entries: r.Entries,
			First: r.First, Last: r.Last, Changes: r.Changes, Commit: r.Commit,
			Reason: r.Reason, PublicReason: r.PublicReason, Duration: rep.Duration,
			Batches: r.Batches, Backlog: r.Backlog, Left: r.Left,
		}
	}
	runs := map[audience.Scope]*LastRun{}
	for i := range rep.Scopes {
		runs[rep.Scopes[i].Scope] = lastOf(&rep.Scopes[i].Report)
	}
	for _, name := range quiet {
		if runs[name] == nil {
			runs[name] = lastOf(&Report{Outcome: OutcomeNothingNew})
		}
	}
	if len(rep.Scopes) == 0 && rep.Outcome != OutcomeNothingNew {
		for name := range h.rec.Scopes {
			if scopes.Has(name) {
				runs[name] = lastOf(rep)
			}
		}
	}
	if len(runs) == 0 {
		return
	}
	if err := h.ranLast(runs); err != nil {
		d.log.Error("dream progress not saved", "err", err)
	}
}

// Observer is told of every finished Dream run, for metrics; cmd passes
// *metrics.Metrics. It is called on the run's goroutine and must return at
// once.
type Observer interface {
	// DreamDone: a run ended with outcome (an Outcome value) after took.
	DreamDone(outcome string, took time.Duration)
}

// observe reports a run; a run refused because another was going (no
// Outcome) is not one.
func (d *Dreamer) observe(rep Report) {
	if d.obs == nil || rep.Outcome == "" {
		return
	}
	d.obs.DreamDone(string(rep.Outcome), rep.Duration)
}
