package dream

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

// RestoreOptions say how a restore is made.
type RestoreOptions struct {
	// Resolution decides where a later change touched the lines the
	// restore would undo: gitstore.KeepLater (the default) or
	// gitstore.UndoAll.
	Resolution gitstore.Resolution
	// Origin is a sentence for the revert commit's message: where the
	// restore was asked for and by whom ("Asked for on the memory page by
	// the operator."). "" adds nothing.
	Origin string
}

// RestoreResult is what Restore did.
type RestoreResult struct {
	// Target is the commit whose change was undone.
	Target gitstore.Commit
	// Revert is the new "revert: undo …" commit.
	Revert gitstore.Commit
	// Plan is what it did, file by file and line by line, the conflicts
	// and how they were resolved.
	Plan gitstore.RestorePlan
	// Files are the memory files the restore changed.
	Files []string
	// Held are the scopes whose deep Dream the restore undid: their memory
	// is not compacted again until it grows past Hold.Until.
	Held []Hold
	// Saved are the commits (short ids) of hand edits the restore saved
	// first: edits of the scope's files made since their last commit,
	// which stay.
	Saved []string
}

// Restore undoes the change of the commit rev (a full id or a unique
// prefix of 4+ hex digits) in the files of the scopes chosen, line by
// line, as a new commit: the lines it added go, the lines it removed or
// changed come back where they stand as it left them; every other line,
// hand edits and later changes, stays (gitstore's line-level undo). Where
// a later change touched the same lines, opts.Resolution decides:
// PlanRestore names those places first.
//
// A Dream's commit, a restore's and a commit of hand edits can be undone
// (ErrNotDreamCommit for any other); a restore's undo brings its change
// back. A commit that changed no file of a chosen scope is, to the asker,
// one that does not exist (an error matching ErrNotInScopes and
// gitstore.ErrUnknownRevision); of the chosen scopes only those the commit
// changed are touched. The Dream cursor is not rolled back: what was
// undone is not dreamed again. Undoing a deep Dream holds the scope (see
// Hold).
//
// A restore is a step (step.go): the scopes' hand edits are saved first,
// then one commit holds the undo, its trailers what the ledger learns
// (which commit it undid, a hold), and the files follow it; a kill at any
// point leaves it done or not done. Restore takes the same single-flight
// lock as Run, so it never races a Dream: it returns a *BusyError at once
// when one is running. Other errors wrap the gitstore sentinels
// (ErrUnknownRevision, ErrAmbiguousRevision, ErrInvalidRevision,
// ErrRootCommit, ErrNothingToCommit when the undo changes nothing now).
func (d *Dreamer) Restore(rev string, scopes Scopes, opts RestoreOptions) (RestoreResult, error) {
	rev = strings.TrimSpace(rev)
	h, _, err := d.open()
	if h == nil {
		return RestoreResult{}, err
	}
	defer h.end()
	if err != nil {
		return RestoreResult{}, fmt.Errorf("dream restore: %w", err)
	}
	target, own, err := d.restoreTarget(rev, scopes)
	if err != nil {
		return RestoreResult{Target: target}, err
	}
	var saved []string
	for _, s := range own {
		rep := &Report{}
		if _, err := d.handEdits(h, s, rep); err != nil {
			return RestoreResult{Target: target}, fmt.Errorf("dream restore: %w", err)
		}
		if rep.ManualCommit != "" {
			saved = append(saved, rep.ManualCommit)
		}
	}
	plan, err := d.repo.PlanUndo(target.SHA, OnlyScopes(own...).pathIn)
	if err != nil {
		return RestoreResult{Target: target}, fmt.Errorf("dream restore: %w", err)
	}
	plan.Target, plan.Resolution = target, opts.Resolution
	res := RestoreResult{Target: target, Plan: plan, Saved: saved}
	changes := plan.Changes(opts.Resolution)
	note, held := d.restoreNote(h, target, own, changes)
	note.extra = plan.Trailers(opts.Resolution)
	landed, err := d.steps(h).land(step{
		note:    note,
		subject: gitstore.RevertPrefix + target.Short,
		body:    plan.Message(opts.Resolution, opts.Origin),
		base:    plan.Base,
		changes: changes,
		also:    own[1:],
		rebase:  undoRebase,
	})
	if err == nil && landed.commit.SHA == "" {
		err = fmt.Errorf("undoing %s changes no line now: %w", target.Short, gitstore.ErrNothingToCommit)
	}
	if err != nil {
		return res, fmt.Errorf("dream restore: %w", err)
	}
	res.Revert, res.Held = landed.commit, held
	for _, ch := range changes {
		res.Files = append(res.Files, ch.Path)
	}
	d.log.Info("dream restored", "target", target.Short, "commit", landed.commit.Short,
		"files", len(res.Files), "conflicts", plan.Conflicts(), "resolution", int(opts.Resolution))
	return res, nil
}

// undoRebase lands a restore's file over an edit a chat made while the
// restore was built: the restore's change (old to ours) is made on the
// edited file (theirs), line by line, the edit's lines kept.
func undoRebase(old, ours, theirs []byte) []byte {
	text := func(b []byte) gitstore.FileText { return gitstore.FileText{Data: b, Exists: true} }
	out, _ := gitstore.UndoLines(text(ours), text(old), text(theirs), gitstore.KeepLater)
	return out.Data
}

// RestorePlan is what a restore would do if asked now: a confirmation names
// it (every file and line, the conflicts to choose on) before the restore
// is made.
type RestorePlan struct {
	gitstore.RestorePlan
	// Deep says the commit is a deep Dream: undoing it holds the scope.
	Deep bool
}

// PlanRestore says what Restore(rev, scopes, …) would do now, changing
// nothing and taking no lock: the same target, files, lines and
// conflicts (hand edits not yet committed planned on as they stand), with
// the same errors. A Dream or a restore in between changes what the
// restore does; a caller that asked someone to confirm a plan compares it
// with a fresh one before restoring.
func (d *Dreamer) PlanRestore(rev string, scopes Scopes) (RestorePlan, error) {
	target, own, err := d.restoreTarget(strings.TrimSpace(rev), scopes)
	if err != nil {
		return RestorePlan{RestorePlan: gitstore.RestorePlan{Target: target}}, err
	}
	p, err := d.repo.PlanRestore(target.SHA, OnlyScopes(own...).pathIn)
	if err != nil {
		return RestorePlan{RestorePlan: gitstore.RestorePlan{Target: target}}, fmt.Errorf("dream restore plan: %w", err)
	}
	p.Target = target
	return RestorePlan{RestorePlan: p, Deep: isDeep(target)}, nil
}

// UndoablePrefixes start the subjects of the commits whose change can be
// undone: a Dream's, a restore's (undoing it brings back what it undid)
// and one of hand edits.
var UndoablePrefixes = []string{SubjectPrefix, gitstore.RevertPrefix, gitstore.ManualSubject}

// Undoable says a commit's change can be undone (UndoablePrefixes).
func Undoable(subject string) bool {
	return slices.ContainsFunc(UndoablePrefixes, func(p string) bool { return strings.HasPrefix(subject, p) })
}

func isDeep(c gitstore.Commit) bool { return strings.HasPrefix(c.Subject, DeepSubject) }

func isRevert(c gitstore.Commit) bool { return strings.HasPrefix(c.Subject, gitstore.RevertPrefix) }

// restoreTarget finds the commit rev among the commits of the chosen
// scopes, and the scopes of the files it changed.
func (d *Dreamer) restoreTarget(rev string, scopes Scopes) (gitstore.Commit, []audience.Scope, error) {
	target, diff, err := d.repo.Show(rev, scopes.pathIn)
	if err != nil {
		return gitstore.Commit{}, nil, fmt.Errorf("dream restore %s: %w", rev, err)
	}
	if diff.Empty() {
		// Said as "no such commit": even its subject is not for this
		// reader.
		return gitstore.Commit{}, nil, fmt.Errorf("dream restore %s: %w", rev, errNotInScopes)
	}
	if !Undoable(target.Subject) {
		return target, nil, fmt.Errorf("dream restore %s (%q): %w", target.Short, target.Subject, ErrNotDreamCommit)
	}
	// Of the chosen scopes, the commit's own: a DM's restore of its
	// person's commit never touches the team's files, which the DM may
	// read too.
	var own []audience.Scope
	for _, f := range diff.Files {
		if s, ok := audience.ScopeOfPath(f.Path); ok && !slices.Contains(own, s) {
			own = append(own, s)
		}
	}
	return target, own, nil
}

// restoreNote is what the restore's commit tells the ledger: the commit it
// undoes (and, undoing a restore, the commit that one had undone, whose
// change is back), and the hold of a restored deep Dream (or the end of
// one, when a restore of a deep Dream is undone).
func (d *Dreamer) restoreNote(h *held, target gitstore.Commit, own []audience.Scope, changes []gitstore.Change) (stepNote, []Hold) {
	n := stepNote{Kind: stepRestore, Scope: own[0], Reverts: target.Short}
	if isRevert(target) {
		n.Redoes = shortOf(gitstore.Reverts(target))
	}
	var held []Hold
	switch {
	case isDeep(target):
		before, err1 := d.scopeTokens(n.Scope, nil)
		after, err2 := d.scopeTokens(n.Scope, changes)
		if err := errors.Join(err1, err2); err != nil {
			d.log.Warn("restored deep Dream: the scope's memory could not be measured; not held", "scope", string(n.Scope), "err", err)
			break
		}
		n.Hold = after + max(after-before, 0)
		held = append(held, Hold{Scope: n.Scope, Tokens: after, Until: n.Hold})
	case n.Redoes != "" && h.scope(n.Scope).DeepHeld > 0 && d.undidDeep(target):
		n.Hold = -1 // the deep Dream's change is back: no hold
	}
	return n, held
}

// restored is what a restore's commit does to the ledger (took): a run
// whose commit it undid is marked undone by it; a run a restore had
// marked, whose undo it undoes, has its change back; a restored deep Dream
// holds its scope, and an undone restore of one no longer does.
func (r *record) restored(n stepNote) {
	for _, p := range r.Scopes {
		switch {
		case p.LastRun == nil || n.Commit == "":
		case p.LastRun.Commit == n.Reverts:
			p.LastRun.UndoneBy = n.Commit
		case n.Redoes != "" && p.LastRun.Commit == n.Redoes && p.LastRun.UndoneBy == n.Reverts:
			p.LastRun.UndoneBy = ""
		}
	}
	switch {
	case n.Hold > 0:
		r.scope(n.Scope).DeepHeld = n.Hold
	case n.Hold < 0:
		r.scope(n.Scope).DeepHeld = 0
	}
}
