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

// editFiles is phase 2: the editing agent applies the findings to the
// batch's copy of the scope's files, a chunk at a time (total counts the
// batch's findings, earlier runs' included). A stopped chunk's edits are
// put back; the chunks completed before it land and the findings after
// them are recorded, in the same commit, for the next run.
func (b *batch) editFiles(ctx context.Context, guide string, findings []finding, total int) error {
	d := b.d
	b.say("Dreaming: editing memory files…")
	applied, size := 0, findingsPerChunk
	for applied < len(findings) {
		chunk := findings[applied:min(applied+size, len(findings))]
		if applied > 0 {
			b.say(fmt.Sprintf("Dreaming: editing memory files (%d of %d findings applied)…", applied, len(findings)))
		}
		err := b.editChunk(ctx, guide, chunk)
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
			continue
		}
		if applied == 0 {
			return b.chunkFailed(ctx, err)
		}
		return b.finishPartial(ctx, findings[:applied], findings[applied:], total, err)
	}
	return b.finish(findings)
}

// editChunk runs the editing agent on one chunk of findings with the files
// as they are now. On a stop it puts back the chunk's own edits and returns
// a *chunkError, which the caller records as the batch's failure
// (chunkFailed) or, when earlier chunks completed, as a partial batch.
func (b *batch) editChunk(ctx context.Context, guide string, chunk []finding) error {
	d, rep, ws := b.d, b.rep, b.stage.root
	before, err := snapshot(ws)
	if err != nil {
		return b.fail(false, "the memory files could not be read", err)
	}
	files, err := b.stage.files()
	if err != nil {
		return b.fail(false, "the memory files could not be read", err)
	}
	budget := max(d.cfg.MaxIterations, len(chunk)+editMargin)
	res, cutOff, err := b.edit(ctx, ws, guide, chunk, files, budget)
	rep.Calls += res.Iterations
	rep.Phase2 = rep.Phase2.Add(res.Usage)
	rep.Usage = rep.Usage.Add(res.Usage)
	if err == nil && res.Stop == agent.StopCompleted && !cutOff {
		if res.ToolErrors > 0 {
			d.log.Info("dream editing step recovered from tool errors", "tool_calls", res.ToolCalls, "tool_errors", res.ToolErrors)
		}
		return nil
	}
	b.putBack(ws, before)
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
func (b *batch) edit(ctx context.Context, ws *workspace.Root, guide string, findings []finding, files []memFile, budget int) (agent.Result, bool, error) {
	d := b.d
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
	res, err := loop.Run(ctx, phase2Messages(guide, findings, files, b.namedIn(findings)))
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

func (h hookedRepo) CommitChangesWith(parent string, changes []gitstore.Change, subject, body string, with func(gitstore.Commit, gitstore.DBTx) error) (gitstore.Commit, error) {
	c, err := h.Repo.CommitChangesWith(parent, changes, subject, body, with)
	if err == nil {
		h.hook(PointCommit)
	}
	return c, err
}

func (h hookedRepo) CommitChanges(parent string, changes []gitstore.Change, subject, body string) (gitstore.Commit, error) {
	c, err := h.Repo.CommitChanges(parent, changes, subject, body)
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
