package dream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/history"
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
	log   *slog.Logger
	now   func() time.Time
	hook  func(point string)
	obs   Observer // nil: none
	// ledger holds Dream's progress, and the Dream lock its writers take.
	ledger *Ledger

	mu   sync.Mutex
	next func() time.Time // set by a Scheduler
}

// Ledger is the Dreamer's record of Dream's progress: what /status and
// /metrics read.
func (d *Dreamer) Ledger() *Ledger { return d.ledger }

// Run makes one Dream now: read the next batch of history, analyse it,
// apply the findings, commit, advance the cursor; while unread entries
// remain, go on with the next batch (up to Config.MaxBatchesPerRun and
// Config.MaxTokensPerRun); then compact the history. It never waits for
// another Dream: when one is running (here or in another process) it
// returns a *BusyError at once. Each batch is bounded by Config.Timeout.
//
// progress, when non-nil, is called at phase boundaries with a short text
// for a chat ("Dreaming: reading 14 history entries…").
//
// The Report is filled in whatever happens. err is nil when the run
// completed or found nothing new; otherwise it is a *BusyError, or a
// *RunError (ErrRunFailed, ErrBatchSkipped) whose Reason is also in the
// Report, with the whole chain for the log.
func (d *Dreamer) Run(ctx context.Context, trigger string, progress func(string)) (Report, error) {
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
		d.saveLastRun(h, &rep)
		d.log.Error("dream could not recover an interrupted run", "trigger", trigger, "err", err)
		return rep, &RunError{Reason: rep.Reason, Err: err}
	}
	for n := 1; ; n++ {
		b := &run{d: d, h: h, scope: DefaultScope, parent: ctx, progress: progress,
			rep: &Report{Trigger: trigger, Started: d.now(), MaxFailures: d.cfg.MaxFailures}}
		bctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		err = b.do(bctx)
		cancel()
		rep.add(*b.rep)
		if err != nil || b.rep.Outcome != OutcomeCompleted {
			break
		}
		if n >= d.cfg.MaxBatchesPerRun || ctx.Err() != nil {
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
	rep.Backlog = d.backlog(h.scope(DefaultScope).Cursor)
	d.compact(&rep)
	d.pack(&rep)
	rep.Duration = d.now().Sub(start)
	rep.Usage.Calls = rep.Calls
	d.saveLastRun(h, &rep)

	attrs := []any{"trigger", trigger, "outcome", rep.Outcome, "entries", rep.Entries,
		"first", rep.First, "last", rep.Last, "batches", rep.Batches, "backlog", rep.Backlog,
		"findings", rep.Findings, "left", rep.Left, "changes", rep.Changes,
		"commit", rep.Commit, "calls", rep.Calls, "prompt_tokens", rep.Usage.PromptTokens,
		"completion_tokens", rep.Usage.CompletionTokens, "duration", rep.Duration}
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

// backlog counts the history entries after cursor (0 when it cannot tell).
func (d *Dreamer) backlog(cursor int) int {
	n, err := d.ledger.backlogAfter(cursor)
	if err != nil {
		d.log.Warn("dream could not count the unread history", "err", err)
	}
	return n
}

// run is the state of one batch of a Dreamer.Run.
type run struct {
	d        *Dreamer
	rep      *Report
	parent   context.Context
	progress func(string)
	// h is the ledger, held for the Run; scope the memory scope the batch
	// is read for.
	h     *held
	scope string
	// public is the public variant of the reason modelCause returned last
	// (consumed by the next fail or partial finish).
	public string
}

// setReason records why the batch failed, with its public variant.
func (r *run) setReason(reason string) {
	r.rep.Reason, r.rep.PublicReason = reason, reason
	if r.public != "" {
		r.rep.PublicReason, r.public = r.public, ""
	}
}

func (r *run) say(msg string) {
	if r.progress != nil {
		r.progress(msg)
	}
}

// do is one batch; it returns nil or a *RunError and fills the Report. It
// reads the batch and the files, then runs phase 1 (analyse) — unless an
// earlier run left findings of this batch to apply — phase 2 (editFiles)
// and finish, each of which returns the batch's error itself.
func (r *run) do(ctx context.Context) error {
	d, rep := r.d, r.rep
	cursor := r.h.scope(r.scope).Cursor
	batch, err := d.hist.Since(cursor, d.cfg.MaxBatchSize)
	if err != nil {
		return r.fail(false, "the history could not be read", fmt.Errorf("read history after %d: %w", cursor, err))
	}
	pending := r.pendingFor(batch)
	if pending != nil {
		for len(batch) > 0 && batch[len(batch)-1].Cursor > pending.Last {
			batch = batch[:len(batch)-1]
		}
	}
	if len(batch) == 0 {
		rep.Outcome = OutcomeNothingNew
		return nil
	}
	rep.Entries, rep.First, rep.Last = len(batch), batch[0].Cursor, batch[len(batch)-1].Cursor
	if pending != nil {
		r.say(fmt.Sprintf("Dreaming: applying %s left from history %d-%d…", plural(len(pending.Findings), "finding", "findings"), rep.First, rep.Last))
	} else {
		r.say(fmt.Sprintf("Dreaming: reading %s…", plural(len(batch), "history entry", "history entries")))
	}

	if err := r.commitHandEdits(); err != nil {
		return r.fail(false, "the memory repository could not save the hand edits made since the last commit", err)
	}
	files, err := readMemoryFiles(d.cfg.Workspace)
	if err != nil {
		return r.fail(false, "the memory files could not be read", err)
	}
	guide, cut, err := guidance(d.cfg.Workspace)
	if err != nil {
		return r.fail(false, "prompts/dream.md could not be read", err)
	}
	if cut {
		d.log.Warn("dream prompt override cut", "path", overridePath, "max_chars", overrideCap)
	}

	var findings []finding
	total := 0
	if pending != nil {
		findings, total = pending.Findings, pending.Total
		rep.Findings = len(findings)
	} else {
		if findings, err = r.analyse(ctx, phase1Messages(guide, batch, d.now(), files)); err != nil {
			return err
		}
		total = len(findings)
	}
	if len(findings) == 0 {
		return r.complete()
	}
	// The workspace phase 2 edits through, and that finish puts the files
	// back through when the commit fails: the gateway's own when it shares
	// one (its write lock then serialises chat edits with Dream's), else
	// one for this run.
	ws := d.files
	if ws == nil {
		if ws, err = workspace.Open(d.cfg.Workspace); err != nil {
			return r.fail(false, "the memory files could not be opened for editing", fmt.Errorf("open workspace for phase 2: %w", err))
		}
		defer ws.Close()
	}
	return r.editFiles(ctx, ws, guide, findings, total)
}

// pendingFor returns the findings an earlier run left for the batch that
// starts the unread history, or nil (forgetting a record that no longer
// fits: the cursor moved past it).
func (r *run) pendingFor(batch []history.Entry) *pendingFindings {
	p := r.h.scope(r.scope).Pending
	if p == nil {
		return nil
	}
	if len(batch) == 0 || batch[0].Cursor != p.First || len(p.Findings) == 0 {
		r.d.log.Warn("dream drops findings left for history it no longer reads next", "first", p.First, "last", p.Last, "findings", len(p.Findings))
		if err := r.h.changeScope(r.scope, func(p *progress) { p.Pending = nil }); err != nil {
			r.d.log.Warn("dream progress not saved", "err", err)
		}
		return nil
	}
	return p
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

// saveLastRun records the run's outcome (for Status, also in other
// processes).
func (d *Dreamer) saveLastRun(h *held, rep *Report) {
	last := &LastRun{
		When: rep.Started, Trigger: rep.Trigger, Outcome: rep.Outcome, Entries: rep.Entries,
		First: rep.First, Last: rep.Last, Changes: rep.Changes, Commit: rep.Commit,
		Reason: rep.Reason, PublicReason: rep.PublicReason, Duration: rep.Duration,
		Batches: rep.Batches, Backlog: rep.Backlog, Left: rep.Left,
	}
	if err := h.changeScope(DefaultScope, func(p *progress) { p.LastRun = last }); err != nil {
		d.log.Error("dream progress not saved", "err", err)
	}
}

// Status reports the running, last and next Dream.
func (d *Dreamer) Status() Status {
	var s Status
	s.Since, s.Running = d.ledger.lock.runningSince()
	p, err := d.ledger.progressOf(DefaultScope)
	if err != nil {
		d.log.Warn("dream progress unreadable", "err", err)
	}
	s.Last, s.Skips, s.Cursor = p.LastRun, p.Skips, p.Cursor
	s.Backlog = d.backlog(p.Cursor)
	d.mu.Lock()
	next := d.next
	d.mu.Unlock()
	if next != nil {
		s.Next = next()
	}
	return s
}

func (d *Dreamer) setNext(f func() time.Time) {
	d.mu.Lock()
	d.next = f
	d.mu.Unlock()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
