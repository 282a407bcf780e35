package dream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// SubjectPrefix starts the subject of every Dream commit; only such commits
// are listed by /dream-restore and may be restored.
const SubjectPrefix = "dream:"

// skipSessionKey is the session key of the history entry that records a
// skipped batch; no chat session has it, so it never shows in a chat's
// "Recent history".
const skipSessionKey = "dream"

// Triggers name who started a run (for logs and Status).
const (
	TriggerCron   = "cron"
	TriggerManual = "manual" // /dream in a chat
	TriggerCLI    = "cli"    // dreamgate dream run
)

// Outcome says how a run ended.
type Outcome string

const (
	// OutcomeNothingNew: no history entry after the Dream cursor; no model
	// call was made.
	OutcomeNothingNew Outcome = "nothing-new"
	// OutcomeCompleted: the batch was read, the edits (if any) committed and
	// the cursor advanced.
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed: the run failed; the cursor stayed and the batch will be
	// read again.
	OutcomeFailed Outcome = "failed"
	// OutcomePartial: phase 2 stopped after applying part of the
	// findings: those are committed, the rest recorded for the next run,
	// and the cursor stayed.
	OutcomePartial Outcome = "partial"
	// OutcomeSkipped: the run failed for the MaxFailures-th time on this
	// batch, so the batch was skipped and the skip recorded in the history.
	OutcomeSkipped Outcome = "skipped"
)

// FileChange is one memory file changed by a run, counted from the real
// diff. Changes is max(Added, Deleted): a replaced line counts once, an
// added or removed line once; a binary change counts 1.
type FileChange struct {
	Path           string
	Added, Deleted int
	Changes        int
}

// Report is what a run did, from the files and the history, never from the
// model's account. A run may read several batches (a backlog); the counts
// are their sums, and Outcome, Reason and Failures are those of the last
// batch it attempted.
type Report struct {
	Trigger string
	Outcome Outcome
	// Entries is the number of history entries read; First and Last their
	// cursor range (0 when nothing was read).
	Entries     int
	First, Last int
	// Findings is the number of phase-1 findings phase 2 was given
	// (including findings left by an earlier run and applied by this one).
	Findings int
	// Files lists the memory files changed; Changes is their sum.
	Files   []FileChange
	Changes int
	// Commit is the short id of the last Dream commit ("" when none), and
	// Commits those of every batch, oldest first; ManualCommit that of the
	// commit saving hand edits made before the run; Recovered that of the
	// commit recording an interrupted Dream's edits, made first.
	Commit       string
	Commits      []string
	ManualCommit string
	Recovered    string
	// Batches is the number of batches completed. A run goes on with the
	// next batch while unread entries remain, up to
	// Config.MaxBatchesPerRun batches and Config.MaxTokensPerRun tokens;
	// Backlog is the number of unread entries it left.
	Batches int
	Backlog int
	// EntriesDone counts the entries of the completed batches: Entries
	// without those of a last batch that failed or stopped part-way.
	EntriesDone int
	// Left is the number of a batch's findings that a stopped phase 2 had
	// not applied (OutcomePartial): what it applied is committed, and the
	// next run applies the rest without a new analysis.
	Left int
	// Calls and Usage count the model calls of both phases; Usage.Calls
	// equals Calls.
	Calls          int
	Usage          llm.Usage
	Phase1, Phase2 llm.Usage
	Started        time.Time
	Duration       time.Duration
	// Reason is one sentence, safe to show in a chat, saying why the run
	// failed; "" unless the Outcome is failed, partial or skipped. It is
	// written for the operator: a failed model call names the cause and
	// what to check. PublicReason is the same for anyone else (Slack,
	// Discord), without the operator's detail.
	Reason       string
	PublicReason string
	// Failures is the number of failed runs on this batch so far, this one
	// included (0 when the failure was not the batch's fault: the model was
	// unreachable, the run was cancelled, the repository failed).
	Failures int
	// MaxFailures is the configured limit, for the text.
	MaxFailures int
	// BatchFirst and BatchLast are the range of the last batch attempted:
	// the entries given up on when it was skipped.
	BatchFirst, BatchLast int
	// Dropped is the number of consumed history entries compaction removed.
	Dropped int
}

// add folds a batch's report into the run's.
func (r *Report) add(b Report) {
	if b.Outcome != OutcomeNothingNew || r.Batches == 0 {
		r.Outcome = b.Outcome
	}
	r.Entries += b.Entries
	if r.First == 0 {
		r.First = b.First
	}
	if b.Last > 0 {
		r.Last = b.Last
	}
	r.Findings += b.Findings
	for _, f := range b.Files {
		merged := false
		for i := range r.Files {
			if r.Files[i].Path == f.Path {
				r.Files[i].Added += f.Added
				r.Files[i].Deleted += f.Deleted
				r.Files[i].Changes += f.Changes
				merged = true
			}
		}
		if !merged {
			r.Files = append(r.Files, f)
		}
	}
	r.Changes += b.Changes
	if b.Commit != "" {
		r.Commit = b.Commit
		r.Commits = append(r.Commits, b.Commit)
	}
	if r.ManualCommit == "" {
		r.ManualCommit = b.ManualCommit
	}
	if b.Outcome == OutcomeCompleted {
		r.Batches++
		r.EntriesDone += b.Entries
	}
	r.Left = b.Left
	r.Calls += b.Calls
	r.Usage = r.Usage.Add(b.Usage)
	r.Phase1 = r.Phase1.Add(b.Phase1)
	r.Phase2 = r.Phase2.Add(b.Phase2)
	r.Reason, r.PublicReason, r.Failures = b.Reason, b.PublicReason, b.Failures
	if b.Entries > 0 {
		r.BatchFirst, r.BatchLast = b.First, b.Last
	}
}

// Dreamer runs Dreams for one workspace. Its methods are safe for concurrent
// use; Run and Restore are single-flight across goroutines and processes.
type Dreamer struct {
	cfg    Config
	model  Model
	hist   History
	repo   Repo
	files  *workspace.Root // nil: opened per run
	log    *slog.Logger
	now    func() time.Time
	hook   func(point string)
	flight flight
	obs    Observer // nil: none

	mu   sync.Mutex
	next func() time.Time // set by a Scheduler
}

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
	release, err := d.flight.acquire(start)
	if err != nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			d.log.Info("dream refused: already running", "trigger", trigger, "elsewhere", busy.Elsewhere)
			return rep, err
		}
		rep.Outcome, rep.Reason = OutcomeFailed, "the Dream lock could not be taken"
		d.log.Error("dream lock failed", "trigger", trigger, "err", err)
		return rep, &RunError{Reason: rep.Reason, Err: err}
	}
	defer release()

	st, err := loadState(d.cfg.Workspace)
	if err != nil {
		d.log.Warn("dream state unreadable; starting afresh", "err", err)
	}
	if rep.Recovered, err = d.recoverIntent(&st); err != nil {
		// The interrupted run's edits stay uncommitted and the intent in
		// place: going on would commit them as hand edits.
		rep.Outcome, rep.Reason = OutcomeFailed, "the edits of an interrupted Dream could not be recorded"
		rep.Duration = d.now().Sub(start)
		d.saveState(&st, &rep)
		d.log.Error("dream could not recover an interrupted run", "trigger", trigger, "err", err)
		return rep, &RunError{Reason: rep.Reason, Err: err}
	}
	for n := 1; ; n++ {
		b := &run{d: d, parent: ctx, progress: progress, st: &st,
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
	rep.Backlog = d.backlog()
	d.compact(&rep)
	d.pack(&rep)
	rep.Duration = d.now().Sub(start)
	rep.Usage.Calls = rep.Calls
	d.saveState(&st, &rep)

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

// backlog counts the unread history entries (0 when it cannot tell).
func (d *Dreamer) backlog() int {
	cursor, err := d.hist.DreamCursor()
	if err != nil {
		return 0
	}
	left, err := d.hist.Since(cursor, 0)
	if err != nil {
		d.log.Warn("dream could not count the unread history", "err", err)
		return 0
	}
	return len(left)
}

// run is the state of one batch of a Dreamer.Run.
type run struct {
	d        *Dreamer
	rep      *Report
	parent   context.Context
	progress func(string)
	// st is memory/.dream_state as read at the start of the Run; the
	// batches update it and Run writes it once at the end (the Dream lock
	// keeps it ours).
	st *state
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
	cursor, err := d.hist.DreamCursor()
	if err != nil {
		return r.fail(false, "the history could not be read", fmt.Errorf("read dream cursor: %w", err))
	}
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
		r.st.Pending = nil
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
	p := r.st.Pending
	if p == nil {
		return nil
	}
	if len(batch) == 0 || batch[0].Cursor != p.First || len(p.Findings) == 0 {
		r.d.log.Warn("dream drops findings left for history it no longer reads next", "first", p.First, "last", p.Last, "findings", len(p.Findings))
		r.st.Pending = nil
		return nil
	}
	return p
}

// analyse is phase 1: one model call that turns the batch into findings. A
// non-nil error is the run's result (a *RunError); no findings and no error
// means the model read the batch and found nothing to keep.
func (r *run) analyse(ctx context.Context, msgs []llm.Message) ([]finding, error) {
	d, rep := r.d, r.rep
	resp, err := d.model.Chat(ctx, llm.Request{
		Model:    d.cfg.Model,
		Messages: msgs,
		Purpose:  llm.PurposeDreamAnalysis,
	})
	rep.Calls++
	rep.Phase1 = resp.Usage
	rep.Usage = rep.Usage.Add(resp.Usage)
	if err != nil {
		return nil, r.modelFailure(ctx, "analysis", err)
	}
	switch {
	case resp.FinishReason == llm.FinishLength:
		return nil, r.fail(true, "the analysis was cut off at the model's output limit", errors.New("phase 1 answer cut off (finish_reason length)"))
	case strings.TrimSpace(resp.Content) == "":
		return nil, r.fail(true, "the model's analysis was empty", errors.New("phase 1 answer empty"))
	}
	a := parseAnalysis(resp.Content)
	if len(a.ignored) > 0 {
		d.log.Info("dream analysis lines ignored", "count", len(a.ignored))
		for _, line := range a.ignored {
			d.log.Debug("dream analysis line ignored", "line", line)
		}
	}
	if len(a.findings) == 0 && a.skips == 0 {
		// Prose, an error text or a format the model made up: taking it
		// for "nothing to do" would advance the cursor past what the users
		// said without anyone having read it.
		return nil, r.fail(true, "the model's analysis did not use the expected format", fmt.Errorf("phase 1 answer has no tagged line (%d lines ignored)", len(a.ignored)))
	}
	rep.Findings = len(a.findings)
	return a.findings, nil
}

// editFiles is phase 2: the editing agent applies the findings, a chunk at
// a time (total counts the batch's findings, earlier runs' included). A
// stopped chunk's edits are put back; the chunks completed before it are
// committed and the findings after them recorded for the next run. An
// intent record stands while edits are on disk that no commit holds, so a
// killed run's edits are recovered as Dream's.
func (r *run) editFiles(ctx context.Context, ws *workspace.Root, guide string, findings []finding, total int) error {
	d, rep := r.d, r.rep
	r.say("Dreaming: editing memory files…")
	snaps, err := snapshot(ws)
	if err != nil {
		return r.fail(false, "the memory files could not be read", err)
	}
	in := newIntent(rep.First, rep.Last, snaps, findings, total, d.now())
	if err := saveIntent(d.cfg.Workspace, in); err != nil {
		return r.fail(false, "the Dream could not record what it is about to edit", err)
	}
	applied, size := 0, findingsPerChunk
	for applied < len(findings) {
		chunk := findings[applied:min(applied+size, len(findings))]
		if applied > 0 {
			r.say(fmt.Sprintf("Dreaming: editing memory files (%d of %d findings applied)…", applied, len(findings)))
		}
		err := r.editChunk(ctx, ws, guide, chunk)
		var ce *chunkError
		if errors.As(err, &ce) && ce.res.Stop == agent.StopMaxIterations && len(chunk) > 1 && ctx.Err() == nil {
			// Our budget, not the batch: a model that needs more calls
			// per finding gets the same findings in smaller chunks. Only a
			// single finding that exhausts its budget is the model's
			// failure.
			size = len(chunk) / 2
			d.log.Info("dream editing chunk ran out of calls; retrying it in smaller chunks", "findings", len(chunk), "calls", ce.res.Iterations, "next_size", size)
			continue
		}
		if err == nil {
			applied += len(chunk)
			in.Applied = applied
			if serr := saveIntent(d.cfg.Workspace, in); serr != nil {
				d.log.Warn("dream intent not updated; a crash now would apply some findings twice", "err", serr)
			}
			continue
		}
		if applied == 0 {
			r.putBack(ws, snaps)
			r.dropIntent()
			return r.chunkFailed(ctx, err)
		}
		return r.finishPartial(ctx, ws, snaps, findings[applied:], total, err)
	}
	return r.finish(ws, snaps)
}

// editChunk runs the editing agent on one chunk of findings with the files
// as they are now. On a stop it puts back the chunk's own edits and returns
// a *chunkError, which the caller records as the batch's failure
// (chunkFailed) or, when earlier chunks completed, as a partial batch.
func (r *run) editChunk(ctx context.Context, ws *workspace.Root, guide string, chunk []finding) error {
	d, rep := r.d, r.rep
	before, err := snapshot(ws)
	if err != nil {
		return r.fail(false, "the memory files could not be read", err)
	}
	files, err := readMemoryFiles(d.cfg.Workspace)
	if err != nil {
		return r.fail(false, "the memory files could not be read", err)
	}
	budget := max(d.cfg.MaxIterations, len(chunk)+editMargin)
	res, cutOff, err := r.edit(ctx, ws, guide, chunk, files, budget)
	rep.Calls += res.Iterations
	rep.Phase2 = rep.Phase2.Add(res.Usage)
	rep.Usage = rep.Usage.Add(res.Usage)
	if err == nil && res.Stop == agent.StopCompleted && !cutOff {
		if res.ToolErrors > 0 {
			d.log.Info("dream editing step recovered from tool errors", "tool_calls", res.ToolCalls, "tool_errors", res.ToolErrors)
		}
		return nil
	}
	r.putBack(ws, before)
	return &chunkError{res: res, cutOff: cutOff, budget: budget, err: err}
}

// chunkError is a stopped chunk, classified by fail when it becomes the
// batch's result (failure) or by finishPartial (progress was made).
type chunkError struct {
	res    agent.Result
	cutOff bool
	budget int
	err    error
}

func (e *chunkError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("phase 2 stopped: %s", e.res.Stop)
}

// chunkFailed records a stopped chunk as the batch's failure.
func (r *run) chunkFailed(ctx context.Context, err error) error {
	var ce *chunkError
	if !errors.As(err, &ce) {
		return err // recorded by fail already
	}
	counted, reason, cause := r.classify(ctx, ce)
	return r.fail(counted, reason, cause)
}

// classify turns a stopped chunk into the reason a user reads, the error
// for the log, and whether it counts against the batch.
func (r *run) classify(ctx context.Context, ce *chunkError) (counted bool, reason string, err error) {
	res := ce.res
	switch {
	case ce.cutOff:
		return true, "the editing step's answer was cut off at the model's output limit",
			errors.New("phase 2 final answer cut off (finish_reason length)")
	case res.Stop == agent.StopMaxIterations:
		return true, fmt.Sprintf("the editing step used its %d model calls without finishing", ce.budget),
			fmt.Errorf("phase 2 stopped at the iteration limit (%d calls, %d tool calls, %d failed)", res.Iterations, res.ToolCalls, res.ToolErrors)
	case res.Stop == agent.StopToolFailed:
		// Disk full, permission denied: the environment's fault, not the
		// batch's, so it does not count towards skipping the batch.
		return false, "the memory files could not be written (" + res.ToolErr.Error() + ")",
			fmt.Errorf("phase 2 stopped: %w", res.ToolErr)
	case res.Stop == agent.StopRepeated:
		return true, "the editing step kept repeating the same tool call",
			fmt.Errorf("phase 2 stopped: a tool call repeated %d times (%d calls)", repeatLimit, res.Iterations)
	}
	err = ce.err
	if err == nil {
		err = fmt.Errorf("phase 2 stopped: %s", res.Stop)
	}
	return r.modelCause(ctx, "editing", err)
}

// finish commits what phase 2 really changed (putting the files back as
// snaps has them when that fails) and advances the cursor.
func (r *run) finish(ws *workspace.Root, snaps []fileSnap) error {
	defer r.dropIntent()
	diff, err := r.d.repo.Status()
	if err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not compare the files", fmt.Errorf("status after phase 2: %w", err))
	}
	if err := r.commit(diff, ""); err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not record the changes", err)
	}
	return r.complete()
}

// finishPartial ends a batch whose phase 2 stopped after completing some
// chunks: their edits are sound and committed, the findings left are
// recorded for the next run, and the batch's failure count starts again
// (progress was made; a skip must never come from our own limits). The
// cursor stays.
func (r *run) finishPartial(ctx context.Context, ws *workspace.Root, snaps []fileSnap, left []finding, total int, stop error) error {
	defer r.dropIntent()
	rep := r.rep
	var ce *chunkError
	var re *RunError
	reason, cause := "the editing step stopped", stop
	switch {
	case errors.As(stop, &ce):
		_, reason, cause = r.classify(ctx, ce)
	case errors.As(stop, &re):
		reason, cause = re.Reason, re.Err
	}
	diff, err := r.d.repo.Status()
	if err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not compare the files", fmt.Errorf("status after phase 2: %w", err))
	}
	note := fmt.Sprintf("(partial: %d of %d findings left)", len(left), total)
	if err := r.commit(diff, note); err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not record the changes", err)
	}
	r.st.Pending = &pendingFindings{First: rep.First, Last: rep.Last, Total: total, Findings: left}
	r.st.Failures = nil
	rep.Outcome, rep.Left = OutcomePartial, len(left)
	r.setReason(reason)
	r.d.log.Warn("dream applied part of a batch; the rest waits for the next run",
		"first", rep.First, "last", rep.Last, "left", len(left), "findings", total, "commit", rep.Commit, "err", cause)
	return &RunError{Reason: reason, Err: cause}
}

// dropIntent removes the intent once no uncommitted Dream edit is on disk.
func (r *run) dropIntent() {
	if err := removeIntent(r.d.cfg.Workspace); err != nil {
		r.d.log.Warn("dream intent not removed; the next run will look at it again", "err", err)
	}
}

// finishReason remembers the finish reason of the last answer, which the
// agent loop does not report: a final answer cut off at the length limit is
// not a completed edit.
type finishReason struct {
	Model
	mu   sync.Mutex
	last string
}

func (f *finishReason) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := f.Model.Chat(ctx, req)
	f.mu.Lock()
	f.last = resp.FinishReason
	f.mu.Unlock()
	return resp, err
}

func (f *finishReason) cutOff() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last == llm.FinishLength
}

// hooked calls after once its tool ran without an error (Deps.Hook).
type hooked struct {
	agent.Tool
	after func()
}

func (h hooked) Run(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := h.Tool.Run(ctx, args)
	if err == nil {
		h.after()
	}
	return out, err
}

// edit runs phase 2 through the shared agent loop with read_file and
// edit_file confined to the three memory files, for at most budget model
// calls. cutOff reports a final answer cut at the length limit.
func (r *run) edit(ctx context.Context, ws *workspace.Root, guide string, findings []finding, files []memFile, budget int) (agent.Result, bool, error) {
	d := r.d
	tools := agent.FileTools(ws, agent.DreamPolicy(), agent.ToolReadFile, agent.ToolEditFile)
	if d.hook != nil {
		for i, t := range tools {
			if t.Def().Name == agent.ToolEditFile {
				tools[i] = hooked{Tool: t, after: func() { d.hook(PointEdit) }}
			}
		}
	}
	model := &finishReason{Model: d.model}
	loop := agent.Loop{
		Model:         model,
		Tools:         tools,
		ModelName:     d.cfg.Model,
		Purpose:       llm.PurposeDreamEdit,
		MaxIterations: budget,
		RepeatLimit:   repeatLimit,
		Logger:        d.log,
	}
	res, err := loop.Run(ctx, phase2Messages(guide, findings, files))
	return res, res.Stop == agent.StopCompleted && model.cutOff(), err
}

// commitHandEdits records edits of the memory files made since the last
// commit, so the Dream commit shows Dream's edits alone.
func (r *run) commitHandEdits() error {
	st, err := r.d.repo.Status()
	if err != nil {
		return fmt.Errorf("status before dream: %w", err)
	}
	if st.Empty() {
		return nil
	}
	c, err := r.d.repo.Commit(gitstore.ManualSubject, r.d.repo.Summary(st, summaryCap))
	if errors.Is(err, gitstore.ErrNothingToCommit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("commit hand edits: %w", err)
	}
	r.rep.ManualCommit = c.Short
	r.d.log.Info("dream saved hand edits first", "commit", c.Short, "files", len(st.Files))
	return nil
}

// commit records phase 2's edits, if the files really changed; note, when
// set, ends the subject.
func (r *run) commit(diff gitstore.Diff, note string) error {
	rep := r.rep
	rep.Files, rep.Changes = countChanges(diff)
	if rep.Changes == 0 {
		return nil
	}
	subject := fmt.Sprintf("%s %s from history %d-%d", SubjectPrefix,
		plural(rep.Changes, "change", "changes"), rep.First, rep.Last)
	if note != "" {
		subject += " " + note
	}
	c, err := r.d.repo.Commit(subject, r.d.repo.Summary(diff, summaryCap))
	if errors.Is(err, gitstore.ErrNothingToCommit) {
		rep.Files, rep.Changes = nil, 0
		return nil
	}
	if err != nil {
		rep.Files, rep.Changes = nil, 0
		return fmt.Errorf("commit dream run: %w", err)
	}
	rep.Commit = c.Short
	return nil
}

// countChanges turns the real diff into per-file change counts.
func countChanges(diff gitstore.Diff) ([]FileChange, int) {
	var files []FileChange
	total := 0
	for _, f := range diff.Files {
		n := max(f.Added, f.Deleted)
		if f.Binary || n == 0 {
			n = 1
		}
		files = append(files, FileChange{Path: f.Path, Added: f.Added, Deleted: f.Deleted, Changes: n})
		total += n
	}
	return files, total
}

// complete advances the cursor past the batch and forgets its failures and
// findings.
func (r *run) complete() error {
	rep := r.rep
	if err := r.d.hist.SetDreamCursor(rep.Last); err != nil {
		// The commit (if any) stands; the batch will be read again, and
		// phase 1 will find its facts already in the files.
		return r.fail(false, "the Dream cursor could not be saved", fmt.Errorf("set dream cursor to %d: %w", rep.Last, err))
	}
	r.st.Failures, r.st.Pending = nil, nil
	rep.Outcome = OutcomeCompleted
	return nil
}

// modelFailure records a failed model call of a phase.
func (r *run) modelFailure(ctx context.Context, phase string, err error) error {
	counted, reason, err := r.modelCause(ctx, phase, err)
	return r.fail(counted, reason, err)
}

// modelCause classifies a failed model call of a phase.
func (r *run) modelCause(ctx context.Context, phase string, err error) (counted bool, reason string, _ error) {
	err = fmt.Errorf("%s: %w", phase, err)
	switch {
	case r.parent.Err() != nil:
		// Shutdown or a cancelled request: not the batch's fault.
		return false, "the Dream was cancelled", err
	case ctx.Err() != nil:
		return true, fmt.Sprintf("the Dream took longer than its limit of %s", r.d.cfg.Timeout), err
	}
	// The cause and what to check are the operator's business.
	r.public = sentence(llm.PublicMessage(err))
	switch {
	case errors.Is(err, llm.ErrUnavailable):
		// An unreachable model says nothing about the batch; counting it
		// would skip history during an outage.
		return false, sentence(llm.UserMessage(err)), err
	default:
		return true, sentence(llm.UserMessage(err)), err
	}
}

// fail records a failed run. A counted failure (the batch's or the model's
// doing, not an outage or a cancellation) adds to the batch's count, and the
// MaxFailures-th one skips the batch. A stopped chunk (*chunkError) is
// classified first.
func (r *run) fail(counted bool, reason string, err error) error {
	rep := r.rep
	rep.Outcome = OutcomeFailed
	r.setReason(reason)
	if !counted || rep.Entries == 0 {
		return &RunError{Reason: reason, Err: err}
	}
	f := r.st.Failures
	if f == nil || f.First != rep.First {
		f = &batchFailures{First: rep.First, Last: rep.Last}
	}
	// The batch may have grown since the first failure; only the entries
	// every failed attempt read count against it.
	f.Last, f.Reason = min(f.Last, rep.Last), reason
	f.Count++
	rep.Failures = f.Count
	r.st.Failures = f
	if f.Count < r.d.cfg.MaxFailures {
		return &RunError{Reason: reason, Err: err}
	}
	return r.skip(f, err)
}

// skip gives up on the entries every failed attempt read (f.First to
// f.Last): record that in the history (first, so a crash in between cannot
// skip silently), then move the cursor past them. Entries that joined the
// batch later are read again by the next run. Findings left by an earlier
// partial run are named in the record, so they stay readable.
func (r *run) skip(f *batchFailures, cause error) error {
	d, rep := r.d, r.rep
	rep.Last = f.Last
	content := fmt.Sprintf("[DREAM-SKIPPED] history entries %d-%d were not read into memory after %d failed Dream runs; last reason: %s.",
		rep.First, rep.Last, f.Count, rep.Reason)
	left := 0
	if p := r.st.Pending; p != nil && p.First == rep.First {
		left = len(p.Findings)
		lines := make([]string, len(p.Findings))
		for i, fd := range p.Findings {
			lines[i] = fd.String()
		}
		content += fmt.Sprintf(" %d of its findings were not applied:\n%s", left, strings.Join(lines, "\n"))
		content, _ = capText(content, skipRecordCap)
	}
	rec, err := d.hist.Append(content, skipSessionKey)
	if err != nil {
		return &RunError{Reason: rep.Reason, Err: errors.Join(cause, fmt.Errorf("record skipped batch: %w", err))}
	}
	// When the record is the very next entry, step over it too: reading it
	// would cost a model call and teach the memory nothing.
	to := rep.Last
	if next, err := d.hist.Since(rep.Last, 1); err == nil && len(next) == 1 && next[0].Cursor == rec.Cursor {
		to = rec.Cursor
	}
	if err := d.hist.SetDreamCursor(to); err != nil {
		return &RunError{Reason: rep.Reason, Err: errors.Join(cause, fmt.Errorf("set dream cursor past skipped batch: %w", err))}
	}
	r.st.Failures, r.st.Pending = nil, nil
	r.st.Skips = append(r.st.Skips, Skip{When: d.now(), First: rep.First, Last: rep.Last, Reason: rep.PublicReason, Findings: left})
	if n := len(r.st.Skips); n > maxSkipsKept {
		r.st.Skips = append([]Skip(nil), r.st.Skips[n-maxSkipsKept:]...)
	}
	rep.Outcome = OutcomeSkipped
	d.log.Warn("dream skipped a history batch after repeated failures",
		"first", rep.First, "last", rep.Last, "failures", f.Count, "record", rec.Cursor, "findings_lost", left, "reason", rep.Reason, "err", cause)
	return &RunError{Reason: rep.Reason, Skipped: true, Err: cause}
}

// skipRecordCap bounds the history entry that records a skipped batch.
const skipRecordCap = 8_000

// putBack undoes a failed phase 2's edits (the batch will be read again).
func (r *run) putBack(ws *workspace.Root, snaps []fileSnap) {
	restored, err := putBack(ws, snaps)
	if len(restored) > 0 {
		r.d.log.Info("dream undid the edits of a failed run", "files", strings.Join(restored, ","))
	}
	if err != nil {
		r.d.log.Error("dream could not undo the edits of a failed run", "err", err)
	}
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

// saveState writes the run's bookkeeping and its outcome (for Status, also
// in other processes) in one atomic write.
func (d *Dreamer) saveState(st *state, rep *Report) {
	st.LastRun = &LastRun{
		When: rep.Started, Trigger: rep.Trigger, Outcome: rep.Outcome, Entries: rep.Entries,
		First: rep.First, Last: rep.Last, Changes: rep.Changes, Commit: rep.Commit,
		Reason: rep.Reason, PublicReason: rep.PublicReason, Duration: rep.Duration,
		Batches: rep.Batches, Backlog: rep.Backlog, Left: rep.Left,
	}
	if err := saveState(d.cfg.Workspace, *st); err != nil {
		d.log.Error("dream state not saved", "err", err)
	}
}

// Status is what /status and `dreamgate status` show about Dream.
type Status struct {
	// Running is true while a Dream runs in this process, since Since.
	// (A Dream in another process is not probed: probing the lock could
	// refuse that process's own start.)
	Running bool
	Since   time.Time
	// Last is the most recent finished run in this workspace, in any
	// process; nil before the first.
	Last *LastRun
	// Next is the next scheduled run; zero without a started Scheduler.
	Next time.Time
	// Skips are the most recent batches skipped after repeated failures,
	// oldest first.
	Skips []Skip
	// Backlog is the number of history entries Dream has not read yet.
	Backlog int
}

// Public is the Status for a chat user who is not the operator: the last
// failure's reason without the operator's detail.
func (s Status) Public() Status {
	if s.Last != nil && s.Last.PublicReason != "" {
		l := *s.Last
		l.Reason = l.PublicReason
		s.Last = &l
	}
	return s
}

// Status reports the running, last and next Dream.
func (d *Dreamer) Status() Status {
	var s Status
	s.Since, s.Running = d.flight.runningSince()
	if st, err := loadState(d.cfg.Workspace); err == nil {
		s.Last, s.Skips = st.LastRun, st.Skips
	}
	s.Backlog = d.backlog()
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

// RestoreResult is what Restore did.
type RestoreResult struct {
	// Target is the Dream commit whose change was undone.
	Target gitstore.Commit
	// Revert is the new "revert: undo …" commit.
	Revert gitstore.Commit
	// Undone lists later commits (newest first) whose changes to the
	// restored files were discarded too.
	Undone []gitstore.Commit
	// Files are the memory files the restore changed.
	Files []string
}

// Restore puts the memory files back to their state just before the Dream
// commit rev (a full id or a unique prefix of 4+ hex digits), as a new commit.
// Only Dream commits can be restored (ErrNotDreamCommit). The Dream cursor is
// not rolled back: what was undone is not dreamed again. Restore takes the
// same single-flight lock as Run, so it never races a Dream: it returns a
// *BusyError at once when one is running. Other errors wrap the gitstore
// sentinels (ErrUnknownRevision, ErrAmbiguousRevision, ErrInvalidRevision,
// ErrRootCommit, ErrNothingToCommit when the files already are in that
// state).
func (d *Dreamer) Restore(rev string) (RestoreResult, error) {
	rev = strings.TrimSpace(rev)
	release, err := d.flight.acquire(d.now())
	if err != nil {
		return RestoreResult{}, err
	}
	defer release()
	// An interrupted Dream's edits are recorded as Dream's first; else the
	// restore would save them as hand edits.
	if err := d.recoverBeforeRestore(); err != nil {
		return RestoreResult{}, fmt.Errorf("dream restore: %w", err)
	}
	target, _, err := d.repo.Show(rev)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("dream restore %s: %w", rev, err)
	}
	if !strings.HasPrefix(target.Subject, SubjectPrefix) {
		return RestoreResult{Target: target}, fmt.Errorf("dream restore %s (%q): %w", target.Short, target.Subject, ErrNotDreamCommit)
	}
	var revert gitstore.Commit
	var undone []gitstore.Commit
	restore := func() (err error) {
		revert, undone, err = d.repo.Restore(target.SHA)
		return err
	}
	if d.files != nil {
		// A chat write between Restore's save of the hand edits and its
		// rewrite of the files would be overwritten and never committed.
		err = d.files.Exclusive(restore)
	} else {
		err = restore()
	}
	if err != nil {
		return RestoreResult{Target: target}, fmt.Errorf("dream restore: %w", err)
	}
	res := RestoreResult{Target: target, Revert: revert, Undone: undone}
	if _, diff, err := d.repo.Show(revert.SHA); err == nil {
		for _, f := range diff.Files {
			res.Files = append(res.Files, f.Path)
		}
	} else {
		d.log.Warn("dream restore: could not list restored files", "commit", revert.Short, "err", err)
	}
	d.log.Info("dream restored", "target", target.Short, "commit", revert.Short, "undone", len(undone))
	d.noteUndone(res)
	return res, nil
}

// noteUndone marks the last run's commit as undone when the restore undid
// it, so Status no longer shows it as the memory's latest change.
func (d *Dreamer) noteUndone(res RestoreResult) {
	st, err := loadState(d.cfg.Workspace)
	if err != nil || st.LastRun == nil || st.LastRun.Commit == "" {
		return
	}
	undid := st.LastRun.Commit == res.Target.Short
	for _, c := range res.Undone {
		undid = undid || c.Short == st.LastRun.Commit
	}
	if !undid {
		return
	}
	st.LastRun.UndoneBy = res.Revert.Short
	if err := saveState(d.cfg.Workspace, st); err != nil {
		d.log.Error("dream state not saved", "err", err)
	}
}

// sentence turns a user message ("The model is unavailable: x.") into a
// clause for our own sentences ("the model is unavailable: x").
func sentence(s string) string {
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "."))
	if s == "" {
		return "the model call failed"
	}
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[size:]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// base is a memory file's name as users know it ("MEMORY.md").
func base(p string) string { return path.Base(p) }
