package dream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

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
	in := newIntent(r.scope, rep.First, rep.Last, snaps, findings, total, d.now())
	if err := r.h.change(func(rec *record) { rec.Intent = &in }); err != nil {
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
			if serr := r.h.change(func(rec *record) { rec.Intent.Applied = applied }); serr != nil {
				d.log.Warn("dream intent not updated; a crash now would apply some findings twice", "err", serr)
			}
			continue
		}
		if applied == 0 {
			r.putBack(ws, snaps)
			r.dropIntent()
			return r.chunkFailed(ctx, err)
		}
		return r.finishPartial(ctx, ws, snaps, findings[:applied], findings[applied:], total, err)
	}
	return r.finish(ws, snaps, findings)
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
	files, err := readMemoryFiles(r.dir())
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
		CacheKey:      cacheKeyEdit,
		MaxIterations: budget,
		RepeatLimit:   repeatLimit,
		Logger:        d.log,
	}
	res, err := loop.Run(ctx, phase2Messages(guide, findings, files))
	return res, res.Stop == agent.StopCompleted && model.cutOff(), err
}

// Cache keys of Dream's calls (llm.Request.CacheKey). Every analysis call
// opens with the same instructions; every editing call with the same
// instructions and tools, and the calls of one editing run each repeat the
// one before and add to it. One key per phase sends them where that prefix
// is cached. Chat calls use their session key, which always holds a colon,
// so they never share these.
const (
	cacheKeyAnalysis = "dreamgate-dream-analysis"
	cacheKeyEdit     = "dreamgate-dream-edit"
)

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

// finish brings the memory lines' metadata up to date (upkeep), commits
// what phase 2 and the upkeep really changed (putting the files back as
// snaps has them when that fails) and advances the cursor. When the cursor
// cannot be saved, the intent stays: the edits are committed, and the next
// run's recovery finds every finding applied and completes the batch.
func (r *run) finish(ws *workspace.Root, snaps []fileSnap, applied []finding) error {
	if err := r.upkeep(ws, snaps, applied); err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory files could not be brought up to date", fmt.Errorf("upkeep after phase 2: %w", err))
	}
	diff, err := r.d.status(r.scope)
	if err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory repository could not compare the files", fmt.Errorf("status after phase 2: %w", err))
	}
	if err := r.commit(diff, ""); err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory repository could not record the changes", err)
	}
	return r.complete()
}

// finishPartial ends a batch whose phase 2 stopped after completing some
// chunks: their edits are sound and committed, the findings left are
// recorded for the next run, and the batch's failure count starts again
// (progress was made; a skip must never come from our own limits). The
// cursor stays.
func (r *run) finishPartial(ctx context.Context, ws *workspace.Root, snaps []fileSnap, applied, left []finding, total int, stop error) error {
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
	if err := r.upkeep(ws, snaps, applied); err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory files could not be brought up to date", fmt.Errorf("upkeep after phase 2: %w", err))
	}
	diff, err := r.d.status(r.scope)
	if err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory repository could not compare the files", fmt.Errorf("status after phase 2: %w", err))
	}
	note := fmt.Sprintf("(partial: %d of %d findings left)", len(left), total)
	if err := r.commit(diff, note); err != nil {
		r.putBack(ws, snaps)
		r.dropIntent()
		return r.fail(false, "the memory repository could not record the changes", err)
	}
	pending := &pendingFindings{First: rep.First, Last: rep.Last, Total: total, Findings: left}
	err = r.h.change(func(rec *record) {
		p := rec.scope(r.scope)
		p.Pending, p.Failures, rec.Intent = pending, nil, nil
	})
	if err != nil {
		// The intent stays, counting the findings applied: the next run's
		// recovery makes the rest pending.
		r.d.log.Warn("dream could not record the findings left for the next run", "err", err)
	}
	rep.Outcome, rep.Left = OutcomePartial, len(left)
	r.setReason(reason)
	r.d.log.Warn("dream applied part of a batch; the rest waits for the next run",
		"first", rep.First, "last", rep.Last, "left", len(left), "findings", total, "commit", rep.Commit, "err", cause)
	return &RunError{Reason: reason, Err: cause}
}

// dropIntent removes the intent once no uncommitted Dream edit is on disk.
func (r *run) dropIntent() {
	if r.h.intent() == nil {
		return
	}
	if err := r.h.change(func(rec *record) { rec.Intent = nil }); err != nil {
		r.d.log.Warn("dream intent not removed; the next run will look at it again", "err", err)
	}
}

// commitHandEdits records edits of the scope's files made since the last
// commit, so the scope's Dream commit shows Dream's edits alone. (The
// default scope's include the instructions, AGENTS.md and
// prompts/dream.md.)
func (r *run) commitHandEdits() error {
	st, err := r.d.status(r.scope)
	if err != nil {
		return fmt.Errorf("status before dream: %w", err)
	}
	if st.Empty() {
		return nil
	}
	c, err := r.d.repo.CommitPaths(diffPaths(st), gitstore.ManualSubject, withTrailer(r.d.repo.Summary(st, summaryCap), r.scope))
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
	c, err := r.d.repo.CommitPaths(diffPaths(diff), subject, withTrailer(r.d.repo.Summary(diff, summaryCap), r.scope))
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

// complete advances the cursor past the batch and forgets its failures,
// its findings and the intent, in one ledger write.
func (r *run) complete() error {
	rep := r.rep
	err := r.h.change(func(rec *record) {
		p := rec.scope(r.scope)
		p.Cursor, p.Failures, p.Pending, rec.Intent = rep.Last, nil, nil, nil
	})
	if err != nil {
		// The commit (if any) stands; the batch will be read again, and
		// phase 1 will find its facts already in the files.
		return r.fail(false, "the Dream cursor could not be saved", fmt.Errorf("dream progress past %d: %w", rep.Last, err))
	}
	rep.Outcome = OutcomeCompleted
	return nil
}

// hookRepo reports each commit to hook at PointCommit (Deps.Hook); a nil
// hook leaves repo as it is.
func hookRepo(repo Repo, hook func(string)) Repo {
	if hook == nil || repo == nil {
		return repo
	}
	return hookedRepo{Repo: repo, hook: hook}
}

type hookedRepo struct {
	Repo
	hook func(string)
}

func (h hookedRepo) CommitPaths(paths []string, subject, body string) (gitstore.Commit, error) {
	c, err := h.Repo.CommitPaths(paths, subject, body)
	if err == nil {
		h.hook(PointCommit)
	}
	return c, err
}

// ClearStaleLocks passes the wrapped repo's capability through:
// clearStaleGitLocks finds it by type, and the wrapper hid it, so a run
// with the hook on left a killed commit's index.lock in place.
func (h hookedRepo) ClearStaleLocks() ([]gitstore.StaleLock, error) {
	if c, ok := h.Repo.(staleLockClearer); ok {
		return c.ClearStaleLocks()
	}
	return nil, nil
}
