package dream

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

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

// Restore puts the files of the scopes chosen that the Dream commit rev (a
// full id or a unique prefix of 4+ hex digits) changed back to their state
// just before it, as a new commit; the files of other scopes stay as they
// are (those chosen too), so a restore never undoes another scope's edits. Only
// Dream commits can be restored (ErrNotDreamCommit), and only one that
// changed a file of a chosen scope: any other is, to the asker, a commit
// that does not exist (an error matching ErrNotInScopes and
// gitstore.ErrUnknownRevision). The Dream cursor is not rolled back: what
// was undone is not dreamed again. Restore takes the same single-flight
// lock as Run, so it never races a Dream: it returns a *BusyError at once
// when one is running. Other errors wrap the gitstore sentinels
// (ErrUnknownRevision, ErrAmbiguousRevision, ErrInvalidRevision,
// ErrRootCommit, ErrNothingToCommit when the files already are in that
// state).
func (d *Dreamer) Restore(rev string, scopes Scopes) (RestoreResult, error) {
	return d.RestoreFrom(rev, scopes, "")
}

// RestoreFrom is Restore recording where it was asked for: origin, a
// sentence such as "Asked for on the memory page by the operator.", goes
// into the revert commit's message ("" adds nothing, as Restore).
func (d *Dreamer) RestoreFrom(rev string, scopes Scopes, origin string) (RestoreResult, error) {
	rev = strings.TrimSpace(rev)
	// An interrupted Dream's edits are recorded as Dream's first; else the
	// restore would save them as hand edits.
	h, _, err := d.open()
	if h == nil {
		return RestoreResult{}, err
	}
	defer h.end()
	if err != nil {
		return RestoreResult{}, fmt.Errorf("dream restore: %w", err)
	}
	target, keep, err := d.restoreTarget(rev, scopes)
	if err != nil {
		return RestoreResult{Target: target}, err
	}
	var revert gitstore.Commit
	var undone []gitstore.Commit
	restore := func() (err error) {
		revert, undone, err = d.repo.RestoreNoted(target.SHA, keep, origin)
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
	if _, diff, err := d.repo.Show(revert.SHA, keep); err == nil {
		for _, f := range diff.Files {
			res.Files = append(res.Files, f.Path)
		}
	} else {
		d.log.Warn("dream restore: could not list restored files", "commit", revert.Short, "err", err)
	}
	d.log.Info("dream restored", "target", target.Short, "commit", revert.Short, "undone", len(undone))
	d.noteUndone(h, res)
	return res, nil
}

// RestorePlan is what a restore would do if asked now: a confirmation names
// it before the restore is made.
type RestorePlan struct {
	// Target is the Dream commit whose change would be undone.
	Target gitstore.Commit
	// Files are the memory files that would be put back.
	Files []string
	// Undone lists later commits (newest first) whose changes to those
	// files would be discarded too.
	Undone []gitstore.Commit
	// Uncommitted says those scopes' files hold edits not yet committed,
	// which the restore would save first and then discard too.
	Uncommitted bool
}

// PlanRestore says what Restore(rev, scopes) would do now, changing
// nothing and taking no lock: the same target, files and later commits,
// with the same errors (a commit of no chosen scope is unknown; one that
// is not Dream's is ErrNotDreamCommit). A Dream or a restore in between
// changes what the restore does; a caller that asked someone to confirm a
// plan compares it with a fresh one before restoring.
func (d *Dreamer) PlanRestore(rev string, scopes Scopes) (RestorePlan, error) {
	target, keep, err := d.restoreTarget(strings.TrimSpace(rev), scopes)
	if err != nil {
		return RestorePlan{Target: target}, err
	}
	p, err := d.repo.PlanRestore(target.SHA, keep)
	if err != nil {
		return RestorePlan{Target: target}, fmt.Errorf("dream restore plan: %w", err)
	}
	return RestorePlan{Target: target, Files: p.Files, Undone: p.Undone, Uncommitted: p.Uncommitted}, nil
}

// restoreTarget finds the Dream commit rev among the commits of the chosen
// scopes and the filter of the files a restore of it may touch.
func (d *Dreamer) restoreTarget(rev string, scopes Scopes) (gitstore.Commit, func(string) bool, error) {
	target, diff, err := d.repo.Show(rev, scopes.pathIn)
	if err != nil {
		return gitstore.Commit{}, nil, fmt.Errorf("dream restore %s: %w", rev, err)
	}
	if diff.Empty() {
		// Said as "no such commit": even its subject is not for this
		// reader.
		return gitstore.Commit{}, nil, fmt.Errorf("dream restore %s: %w", rev, errNotInScopes)
	}
	if !strings.HasPrefix(target.Subject, SubjectPrefix) {
		return target, nil, fmt.Errorf("dream restore %s (%q): %w", target.Short, target.Subject, ErrNotDreamCommit)
	}
	// The repository restores every file the filter accepts to its state
	// before the target: accept the target's own scopes alone (a Dream
	// commit changes one), else a DM's restore of its person's commit would
	// undo the team's later edits, which the DM may read too.
	var own []audience.Scope
	for _, f := range diff.Files {
		if s, ok := audience.ScopeOfPath(f.Path); ok && !slices.Contains(own, s) {
			own = append(own, s)
		}
	}
	return target, OnlyScopes(own...).pathIn, nil
}

// noteUndone marks a scope's last run as undone when the restore undid its
// commit, so Status no longer shows it as the memory's latest change.
func (d *Dreamer) noteUndone(h *held, res RestoreResult) {
	undid := func(short string) bool {
		if short == "" {
			return false
		}
		if short == res.Target.Short {
			return true
		}
		for _, c := range res.Undone {
			if c.Short == short {
				return true
			}
		}
		return false
	}
	hit := false
	for _, p := range h.rec.Scopes {
		hit = hit || (p.LastRun != nil && undid(p.LastRun.Commit))
	}
	if !hit {
		return
	}
	if err := h.undone(undid, res.Revert.Short); err != nil {
		d.log.Error("dream progress not saved", "err", err)
	}
}
