package dream

import (
	"context"
	"errors"
	"fmt"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// batch is one batch of a Run: a scope's entries after its cursor, read
// into the scope's memory in one step. It saves the scope's hand edits
// (handEdits), copies the scope's files (stage), analyses the entries
// with them (phase 1, analysis.go) — unless an earlier batch left findings
// of these entries to apply — applies the findings to the copy (phase 2,
// phase2.go), brings the lines' metadata up to date (upkeep.go), and lands
// the copy as one step whose commit says how far the scope has read and
// which findings are left (step.go). Whatever stops it before the step
// lands leaves the scope's files and the ledger as they were, but for the
// failure count (failure.go).
type batch struct {
	d        *Dreamer
	rep      *Report
	parent   context.Context
	progress func(string)
	// h is the ledger, held for the Run; scope the memory scope the batch
	// is read for.
	h     *held
	scope audience.Scope
	// public is the public variant of the reason modelCause returned last
	// (consumed by the next fail or partial finish).
	public string
	// entries are the history entries read; findings what phase 2 applies
	// (the sources and priorities of the lines it writes); stage the copy
	// of the scope's files it works on.
	entries  []history.Entry
	findings []finding
	stage    *stage
	// named are the lines without an id in their file that phase 1 was
	// shown with one (showIDs), by that id; coldLines the lines of cold
	// memory it is shown (coldShown).
	named     map[string]namedLine
	coldLines []memline.Line
}

// setReason records why the batch failed, with its public variant.
func (b *batch) setReason(reason string) {
	b.rep.Reason, b.rep.PublicReason = reason, reason
	if b.public != "" {
		b.rep.PublicReason, b.public = b.public, ""
	}
}

func (b *batch) say(msg string) {
	if b.progress != nil {
		b.progress(msg)
	}
}

// do is the batch; it returns nil or a *RunError and fills the Report.
func (b *batch) do(ctx context.Context) error {
	d, rep := b.d, b.rep
	cursor := b.h.scope(b.scope).Cursor
	entries, err := d.hist.SinceIn(b.scope, cursor, d.cfg.MaxBatchSize)
	if err != nil {
		return b.fail(false, "the history could not be read", fmt.Errorf("read history after %d: %w", cursor, err))
	}
	pending := b.pendingFor(entries)
	if pending != nil {
		for len(entries) > 0 && entries[len(entries)-1].Cursor > pending.Last {
			entries = entries[:len(entries)-1]
		}
	}
	if len(entries) == 0 {
		rep.Outcome = OutcomeNothingNew
		return nil
	}
	b.entries = entries
	rep.Entries, rep.First, rep.Last = len(entries), entries[0].Cursor, entries[len(entries)-1].Cursor
	if pending != nil {
		b.say(fmt.Sprintf("Dreaming: applying %s left from history %d-%d…", plural(len(pending.Findings), "finding", "findings"), rep.First, rep.Last))
	} else {
		b.say(fmt.Sprintf("Dreaming: reading %s…", plural(len(entries), "history entry", "history entries")))
	}
	base, err := d.handEdits(b.h, b.scope, rep)
	if err != nil {
		return b.fail(false, "the memory repository could not save the hand edits made since the last commit", err)
	}
	if b.stage, err = d.newStage(b.scope, base.SHA); err != nil {
		return b.fail(false, "the memory files could not be read", err)
	}
	defer b.stage.close()
	files, err := b.stage.files()
	if err != nil {
		return b.fail(false, "the memory files could not be read", err)
	}
	guide, cut, err := guidance(d.cfg.Workspace)
	if err != nil {
		return b.fail(false, "prompts/dream.md could not be read", err)
	}
	if cut {
		d.log.Warn("dream prompt override cut", "path", overridePath, "max_chars", overrideCap)
	}
	// Phase 1 is shown every line with an id; the lines without one in
	// their file get the same ids at every Dream, so findings left by an
	// earlier run name them alike.
	shown := b.forAnalysis(files)
	var findings []finding
	total := 0
	if pending != nil {
		findings, total = pending.Findings, pending.Total
		rep.Findings = len(findings)
	} else {
		if findings, err = b.analyse(ctx, guide, shown); err != nil {
			return err
		}
		total = len(findings)
	}
	if len(findings) == 0 {
		return b.complete()
	}
	b.findings = findings
	return b.editFiles(ctx, guide, findings, total)
}

// pendingFor returns the findings an earlier batch left for the entries
// that start the unread history, or nil (forgetting a record that no longer
// fits: the cursor moved past it).
func (b *batch) pendingFor(entries []history.Entry) *pendingFindings {
	p := b.h.scope(b.scope).Pending
	if p == nil {
		return nil
	}
	if len(entries) == 0 || entries[0].Cursor != p.First || len(p.Findings) == 0 {
		b.d.log.Warn("dream drops findings left for history it no longer reads next", "first", p.First, "last", p.Last, "findings", len(p.Findings))
		if err := b.h.dropPending(b.scope); err != nil {
			b.d.log.Warn("dream progress not saved", "err", err)
		}
		return nil
	}
	return p
}

// finish brings the lines' metadata of the copy up to date (upkeep) and
// lands it: the step's commit moves the cursor past the batch.
func (b *batch) finish(applied []finding) error {
	if err := b.upkeep(applied); err != nil {
		return b.fail(false, "the memory files could not be brought up to date", fmt.Errorf("upkeep after phase 2: %w", err))
	}
	n := stepNote{Kind: stepBatch, Scope: b.scope, First: b.rep.First, Last: b.rep.Last, Done: true}
	landed, err := b.land(n, "")
	if err != nil {
		return b.fail(false, "the memory repository could not record the changes", err)
	}
	if !landed {
		return b.complete()
	}
	b.rep.Outcome = OutcomeCompleted
	return nil
}

// finishPartial ends a batch whose phase 2 stopped after completing some
// chunks: their edits are sound and land, with the findings left for the
// next run in the same commit, and the batch's failure count starts again
// (progress was made; a skip must never come from our own limits). The
// cursor stays.
func (b *batch) finishPartial(ctx context.Context, applied, left []finding, total int, stop error) error {
	rep := b.rep
	var ce *chunkError
	var re *RunError
	reason, cause := "the editing step stopped", stop
	switch {
	case errors.As(stop, &ce):
		_, reason, cause = b.classify(ctx, ce)
	case errors.As(stop, &re):
		reason, cause = re.Reason, re.Err
	}
	if err := b.upkeep(applied); err != nil {
		return b.fail(false, "the memory files could not be brought up to date", fmt.Errorf("upkeep after phase 2: %w", err))
	}
	n := stepNote{Kind: stepBatch, Scope: b.scope, First: rep.First, Last: rep.Last, Left: left, Total: total}
	landed, err := b.land(n, fmt.Sprintf("(partial: %d of %d findings left)", len(left), total))
	if err != nil {
		return b.fail(false, "the memory repository could not record the changes", err)
	}
	if !landed {
		pending := pendingFindings{First: rep.First, Last: rep.Last, Total: total, Findings: left}
		if err := b.h.batchLeft(b.scope, pending); err != nil {
			// The findings are analysed again next time; the applied
			// ones changed nothing.
			b.d.log.Warn("dream could not record the findings left for the next run", "err", err)
		}
	}
	rep.Outcome, rep.Left = OutcomePartial, len(left)
	b.setReason(reason)
	b.d.log.Warn("dream applied part of a batch; the rest waits for the next run",
		"first", rep.First, "last", rep.Last, "left", len(left), "findings", total, "commit", rep.Commit, "err", cause)
	return &RunError{Reason: reason, Err: cause}
}

// land commits the copy's changes as the batch's step (note ends the
// subject when set) and reports whether there was a change to commit;
// when there was none, the caller records the batch in the ledger itself.
func (b *batch) land(n stepNote, note string) (bool, error) {
	d, rep := b.d, b.rep
	changes, err := b.stage.changes()
	if err != nil || len(changes) == 0 {
		return false, err
	}
	diff, err := d.repo.DiffChanges(b.stage.base, changes)
	if err != nil {
		return false, fmt.Errorf("diff the Dream's changes: %w", err)
	}
	files, count := countChanges(diff)
	idOnly, err := b.stage.idOnly()
	if err != nil {
		return false, err
	}
	files, count, given := withoutIDChanges(files, count, idOnly)
	if count <= 0 {
		// Ids alone: the next change lands them (they stay the same).
		return false, nil
	}
	subject := fmt.Sprintf("%s %s from history %d-%d", SubjectPrefix, plural(count, "change", "changes"), rep.First, rep.Last)
	if note != "" {
		subject += " " + note
	}
	body := d.repo.Summary(diff, summaryCap)
	if given > 0 {
		body = fmt.Sprintf("%s given an id (id: in its comment), which a correction names.\n\n", plural(given, "line that had none was", "lines that had none were")) + body
	}
	res, err := d.steps(b.h).land(step{note: n, subject: subject, body: body,
		base: b.stage.base, changes: changes, rebase: rebaseLines})
	if err != nil {
		return false, fmt.Errorf("commit dream run: %w", err)
	}
	if res.manual.SHA != "" && rep.ManualCommit == "" {
		rep.ManualCommit = res.manual.Short
	}
	if res.commit.SHA == "" {
		return false, nil
	}
	rep.Files, rep.Changes, rep.Commit = files, count, res.commit.Short
	return true, nil
}

// complete advances the cursor past a batch that committed nothing, and
// forgets its failures and findings, in one ledger write.
func (b *batch) complete() error {
	rep := b.rep
	if err := b.h.batchDone(b.scope, rep.Last); err != nil {
		// The batch will be read again, and phase 1 will find nothing new
		// in the files.
		return b.fail(false, "the Dream cursor could not be saved", fmt.Errorf("dream progress past %d: %w", rep.Last, err))
	}
	rep.Outcome = OutcomeCompleted
	return nil
}
