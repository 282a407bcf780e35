package dream

import (
	"context"
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
// model's account.
type Report struct {
	Trigger string
	Outcome Outcome
	// Entries is the number of history entries read; First and Last their
	// cursor range (0 when nothing was read).
	Entries     int
	First, Last int
	// Findings is the number of phase-1 findings phase 2 was given.
	Findings int
	// Files lists the memory files changed; Changes is their sum.
	Files   []FileChange
	Changes int
	// Commit is the short id of the Dream commit ("" when none);
	// ManualCommit that of the commit saving hand edits made before the run.
	Commit       string
	ManualCommit string
	// Calls and Usage count the model calls of both phases; Usage.Calls
	// equals Calls.
	Calls          int
	Usage          llm.Usage
	Phase1, Phase2 llm.Usage
	Started        time.Time
	Duration       time.Duration
	// Reason is one sentence, safe to show in a chat, saying why the run
	// failed; "" unless the Outcome is failed or skipped.
	Reason string
	// Failures is the number of failed runs on this batch so far, this one
	// included (0 when the failure was not the batch's fault: the model was
	// unreachable, the run was cancelled, the repository failed).
	Failures int
	// MaxFailures is the configured limit, for the text.
	MaxFailures int
	// Dropped is the number of consumed history entries compaction removed.
	Dropped int
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
	flight flight
	obs    Observer // nil: none

	mu   sync.Mutex
	next func() time.Time // set by a Scheduler
}

// Run makes one Dream now: read the next batch of history, analyse it,
// apply the findings, commit, advance the cursor, compact the history. It
// never waits for another Dream: when one is running (here or in another
// process) it returns a *BusyError at once. The run is bounded by
// Config.Timeout.
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

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	r := &run{d: d, rep: &rep, parent: parent, progress: progress}
	r.st, err = loadState(d.cfg.Workspace)
	if err != nil {
		d.log.Warn("dream state unreadable; starting afresh", "err", err)
	}
	err = r.do(ctx)
	r.compact()
	r.pack()
	rep.Duration = d.now().Sub(start)
	rep.Usage.Calls = rep.Calls
	r.saveState()

	attrs := []any{"trigger", trigger, "outcome", rep.Outcome, "entries", rep.Entries,
		"first", rep.First, "last", rep.Last, "findings", rep.Findings, "changes", rep.Changes,
		"commit", rep.Commit, "calls", rep.Calls, "prompt_tokens", rep.Usage.PromptTokens,
		"completion_tokens", rep.Usage.CompletionTokens, "duration", rep.Duration}
	switch rep.Outcome {
	case OutcomeFailed:
		d.log.Warn("dream failed", append(attrs, "failures", rep.Failures, "err", err)...)
	case OutcomeSkipped:
		// run.skip logged the warning with the batch; this is the summary.
		d.log.Info("dream finished", append(attrs, "err", err)...)
	default:
		d.log.Info("dream finished", attrs...)
	}
	return rep, err
}

// run is the state of one Dreamer.Run.
type run struct {
	d        *Dreamer
	rep      *Report
	parent   context.Context
	progress func(string)
	// st is memory/.dream_state as read at the start; the run updates it
	// and writes it once at the end (the Dream lock keeps it ours).
	st state
}

func (r *run) say(msg string) {
	if r.progress != nil {
		r.progress(msg)
	}
}

// do is the run proper; it returns nil or a *RunError and fills the Report.
// It reads the batch and the files, then runs phase 1 (analyse), phase 2
// (editFiles) and finish, each of which returns the run's error itself.
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
	if len(batch) == 0 {
		rep.Outcome = OutcomeNothingNew
		return nil
	}
	rep.Entries, rep.First, rep.Last = len(batch), batch[0].Cursor, batch[len(batch)-1].Cursor
	r.say(fmt.Sprintf("Dreaming: reading %s…", plural(len(batch), "history entry", "history entries")))

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

	findings, err := r.analyse(ctx, phase1Messages(guide, batch, d.now(), files))
	if err != nil {
		return err
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
	snaps, err := r.editFiles(ctx, ws, guide, findings, files)
	if err != nil {
		return err
	}
	return r.finish(ws, snaps)
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

// editFiles is phase 2: the editing agent applies the findings. It returns
// the files as they were before it, for finish to put back on a failure; on
// its own failure it has put them back already and returns the run's error.
func (r *run) editFiles(ctx context.Context, ws *workspace.Root, guide string, findings []finding, files []memFile) ([]fileSnap, error) {
	d, rep := r.d, r.rep
	r.say("Dreaming: editing memory files…")
	snaps, err := snapshot(ws)
	if err != nil {
		return nil, r.fail(false, "the memory files could not be read", err)
	}
	res, err := r.edit(ctx, ws, guide, findings, files)
	rep.Calls += res.Iterations
	rep.Phase2 = res.Usage
	rep.Usage = rep.Usage.Add(res.Usage)
	if err != nil || res.Stop != agent.StopCompleted {
		r.putBack(ws, snaps)
		switch res.Stop {
		case agent.StopMaxIterations:
			return nil, r.fail(true, fmt.Sprintf("the editing step used its %d model calls without finishing", d.cfg.MaxIterations),
				fmt.Errorf("phase 2 stopped at the iteration limit (%d calls, %d tool calls, %d failed)", res.Iterations, res.ToolCalls, res.ToolErrors))
		case agent.StopToolFailed:
			// Disk full, permission denied: the environment's fault, not the
			// batch's, so it does not count towards skipping the batch.
			return nil, r.fail(false, "the memory files could not be written ("+res.ToolErr.Error()+")",
				fmt.Errorf("phase 2 stopped: %w", res.ToolErr))
		case agent.StopRepeated:
			return nil, r.fail(true, "the editing step kept repeating the same tool call",
				fmt.Errorf("phase 2 stopped: a tool call repeated %d times (%d calls)", repeatLimit, res.Iterations))
		}
		if err == nil {
			err = fmt.Errorf("phase 2 stopped: %s", res.Stop)
		}
		return nil, r.modelFailure(ctx, "editing", err)
	}
	if res.ToolErrors > 0 {
		d.log.Info("dream editing step recovered from tool errors", "tool_calls", res.ToolCalls, "tool_errors", res.ToolErrors)
	}
	return snaps, nil
}

// finish commits what phase 2 really changed (putting the files back as
// snaps has them when that fails) and advances the cursor.
func (r *run) finish(ws *workspace.Root, snaps []fileSnap) error {
	diff, err := r.d.repo.Status()
	if err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not compare the files", fmt.Errorf("status after phase 2: %w", err))
	}
	if err := r.commit(diff); err != nil {
		r.putBack(ws, snaps)
		return r.fail(false, "the memory repository could not record the changes", err)
	}
	return r.complete()
}

// edit runs phase 2 through the shared agent loop with read_file and
// edit_file confined to the three memory files.
func (r *run) edit(ctx context.Context, ws *workspace.Root, guide string, findings []finding, files []memFile) (agent.Result, error) {
	d := r.d
	loop := agent.Loop{
		Model:         d.model,
		Tools:         agent.FileTools(ws, agent.DreamPolicy(), agent.ToolReadFile, agent.ToolEditFile),
		ModelName:     d.cfg.Model,
		Purpose:       llm.PurposeDreamEdit,
		MaxIterations: d.cfg.MaxIterations,
		RepeatLimit:   repeatLimit,
		Logger:        d.log,
	}
	return loop.Run(ctx, phase2Messages(guide, findings, files))
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

// commit records phase 2's edits, if the files really changed.
func (r *run) commit(diff gitstore.Diff) error {
	rep := r.rep
	rep.Files, rep.Changes = countChanges(diff)
	if rep.Changes == 0 {
		return nil
	}
	subject := fmt.Sprintf("%s %s from history %d-%d", SubjectPrefix,
		plural(rep.Changes, "change", "changes"), rep.First, rep.Last)
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

// complete advances the cursor past the batch and forgets its failures.
func (r *run) complete() error {
	rep := r.rep
	if err := r.d.hist.SetDreamCursor(rep.Last); err != nil {
		// The commit (if any) stands; the batch will be read again, and
		// phase 1 will find its facts already in the files.
		return r.fail(false, "the Dream cursor could not be saved", fmt.Errorf("set dream cursor to %d: %w", rep.Last, err))
	}
	r.st.Failures = nil
	rep.Outcome = OutcomeCompleted
	return nil
}

// modelFailure classifies a failed model call of a phase.
func (r *run) modelFailure(ctx context.Context, phase string, err error) error {
	err = fmt.Errorf("%s: %w", phase, err)
	switch {
	case r.parent.Err() != nil:
		// Shutdown or a cancelled request: not the batch's fault.
		return r.fail(false, "the Dream was cancelled", err)
	case ctx.Err() != nil:
		return r.fail(true, fmt.Sprintf("the Dream took longer than its limit of %s", r.d.cfg.Timeout), err)
	case errors.Is(err, llm.ErrUnavailable):
		// An unreachable model says nothing about the batch; counting it
		// would skip history during an outage.
		return r.fail(false, sentence(llm.UserMessage(err)), err)
	default:
		return r.fail(true, sentence(llm.UserMessage(err)), err)
	}
}

// fail records a failed run. A counted failure (the batch's or the model's
// doing, not an outage or a cancellation) adds to the batch's count, and the
// MaxFailures-th one skips the batch.
func (r *run) fail(counted bool, reason string, err error) error {
	rep := r.rep
	rep.Outcome, rep.Reason = OutcomeFailed, reason
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
// batch later are read again by the next run.
func (r *run) skip(f *batchFailures, cause error) error {
	d, rep := r.d, r.rep
	rep.Last = f.Last
	content := fmt.Sprintf("[DREAM-SKIPPED] history entries %d-%d were not read into memory after %d failed Dream runs; last reason: %s.",
		rep.First, rep.Last, f.Count, rep.Reason)
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
	r.st.Failures = nil
	rep.Outcome = OutcomeSkipped
	d.log.Warn("dream skipped a history batch after repeated failures",
		"first", rep.First, "last", rep.Last, "failures", f.Count, "record", rec.Cursor, "reason", rep.Reason, "err", cause)
	return &RunError{Reason: rep.Reason, Skipped: true, Err: cause}
}

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
func (r *run) compact() {
	n, err := r.d.hist.Compact(r.d.cfg.MaxEntries)
	if err != nil {
		r.d.log.Warn("dream history compaction failed", "err", err)
		return
	}
	r.rep.Dropped = n
	if n > 0 {
		r.d.log.Info("dream compacted history", "dropped", n)
	}
}

// pack keeps the memory repository small over months of Dreams: go-git
// writes every object as its own file and never packs, so after a run that
// committed, the loose objects are packed once there are enough of them.
// Its failure does not fail the run; the objects stay loose and readable.
func (r *run) pack() {
	if r.rep.Commit == "" && r.rep.ManualCommit == "" {
		return
	}
	n, err := r.d.repo.Pack()
	if err != nil {
		r.d.log.Warn("dream could not pack the memory repository", "err", err)
		return
	}
	if n > 0 {
		r.d.log.Info("dream packed the memory repository", "objects", n)
	}
}

// saveState writes the run's bookkeeping and its outcome (for Status, also
// in other processes) in one atomic write.
func (r *run) saveState() {
	rep := r.rep
	r.st.LastRun = &LastRun{
		When: rep.Started, Trigger: rep.Trigger, Outcome: rep.Outcome, Entries: rep.Entries,
		First: rep.First, Last: rep.Last, Changes: rep.Changes, Commit: rep.Commit,
		Reason: rep.Reason, Duration: rep.Duration,
	}
	if err := saveState(r.d.cfg.Workspace, r.st); err != nil {
		r.d.log.Error("dream state not saved", "err", err)
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
}

// Status reports the running, last and next Dream.
func (d *Dreamer) Status() Status {
	var s Status
	s.Since, s.Running = d.flight.runningSince()
	if st, err := loadState(d.cfg.Workspace); err == nil {
		s.Last = st.LastRun
	}
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
	return res, nil
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
