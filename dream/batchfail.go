package dream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// skipSessionKey is the session key of the history entry that records a
// skipped batch; no chat session has it, so it never shows in a chat's
// "Recent history".
const skipSessionKey = "dream"

// chunkFailed records a stopped chunk as the batch's failure.
func (b *batch) chunkFailed(ctx context.Context, err error) error {
	var ce *chunkError
	if !errors.As(err, &ce) {
		return err // recorded by fail already
	}
	counted, reason, cause := b.classify(ctx, ce)
	return b.fail(counted, reason, cause)
}

// classify turns a stopped chunk into the reason a user reads, the error
// for the log, and whether it counts against the batch.
func (b *batch) classify(ctx context.Context, ce *chunkError) (counted bool, reason string, err error) {
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
	return b.modelCause(ctx, "editing", err)
}

// modelFailure records a failed model call of a phase.
func (b *batch) modelFailure(ctx context.Context, phase string, err error) error {
	counted, reason, err := b.modelCause(ctx, phase, err)
	return b.fail(counted, reason, err)
}

// modelCause classifies a failed model call of a phase.
func (b *batch) modelCause(ctx context.Context, phase string, err error) (counted bool, reason string, _ error) {
	err = fmt.Errorf("%s: %w", phase, err)
	switch {
	case b.parent.Err() != nil:
		// Shutdown or a cancelled request: not the batch's fault.
		return false, "the Dream was cancelled", err
	case ctx.Err() != nil:
		return true, fmt.Sprintf("the Dream took longer than its limit of %s", b.d.cfg.Timeout), err
	}
	// The cause and what to check are the operator's business.
	b.public = sentence(llm.PublicMessage(err))
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
func (b *batch) fail(counted bool, reason string, err error) error {
	rep := b.rep
	rep.Outcome = OutcomeFailed
	b.setReason(reason)
	if !counted || rep.Entries == 0 {
		return &RunError{Reason: reason, Err: err}
	}
	f := batchFailures{First: rep.First, Last: rep.Last}
	if cur := b.h.scope(b.scope).Failures; cur != nil && cur.First == rep.First {
		f = *cur
	}
	// The batch may have grown since the first failure; only the entries
	// every failed attempt read count against it.
	f.Last, f.Reason = min(f.Last, rep.Last), reason
	f.Count++
	rep.Failures = f.Count
	if serr := b.h.batchFailed(b.scope, f); serr != nil {
		// The count starts again; the batch is retried all the same.
		b.d.log.Warn("dream could not record the failure of a batch", "err", serr)
	}
	if f.Count < b.d.cfg.MaxFailures {
		return &RunError{Reason: reason, Err: err}
	}
	return b.skip(f, err)
}

// skip gives up on the entries every failed attempt read (f.First to
// f.Last): record that in the history (first, so a crash in between cannot
// skip silently), then move the cursor past them. Entries that joined the
// batch later are read again by the next run. Findings left by an earlier
// partial run are named in the record, so they stay readable.
func (b *batch) skip(f batchFailures, cause error) error {
	d, rep := b.d, b.rep
	rep.Last = f.Last
	content := fmt.Sprintf("[DREAM-SKIPPED] history entries %d-%d were not read into memory after %d failed Dream runs; last reason: %s.",
		rep.First, rep.Last, f.Count, rep.Reason)
	left := 0
	if p := b.h.scope(b.scope).Pending; p != nil && p.First == rep.First {
		left = len(p.Findings)
		lines := make([]string, len(p.Findings))
		for i, fd := range p.Findings {
			lines[i] = fd.String()
		}
		content += fmt.Sprintf(" %d of its findings were not applied:\n%s", left, strings.Join(lines, "\n"))
		content, _ = capText(content, skipRecordCap)
	}
	rec, err := d.hist.AppendIn(b.scope, content, skipSessionKey)
	if err != nil {
		return &RunError{Reason: rep.Reason, Err: errors.Join(cause, fmt.Errorf("record skipped batch: %w", err))}
	}
	// When the record is the very next entry, step over it too: reading it
	// would cost a model call and teach the memory nothing.
	to := rep.Last
	if next, err := d.hist.SinceIn(b.scope, rep.Last, 1); err == nil && len(next) == 1 && next[0].Cursor == rec.Cursor {
		to = rec.Cursor
	}
	skipped := Skip{When: d.now(), First: rep.First, Last: rep.Last, Reason: rep.PublicReason, Findings: left}
	if err := b.h.skipped(b.scope, to, skipped); err != nil {
		return &RunError{Reason: rep.Reason, Err: errors.Join(cause, fmt.Errorf("move the dream cursor past a skipped batch: %w", err))}
	}
	rep.Outcome = OutcomeSkipped
	d.log.Warn("dream skipped a history batch after repeated failures",
		"first", rep.First, "last", rep.Last, "failures", f.Count, "record", rec.Cursor, "findings_lost", left, "reason", rep.Reason, "err", cause)
	return &RunError{Reason: rep.Reason, Skipped: true, Err: cause}
}

// skipRecordCap bounds the history entry that records a skipped batch.
const skipRecordCap = 8_000

// putBack undoes a stopped chunk's edits of the batch's copy.
func (b *batch) putBack(ws *workspace.Root, snaps []fileSnap) {
	restored, err := putBack(ws, snaps)
	if len(restored) > 0 {
		b.d.log.Info("dream undid the edits of a stopped chunk", "files", strings.Join(restored, ","))
	}
	if err != nil {
		b.d.log.Error("dream could not undo the edits of a stopped chunk", "err", err)
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
