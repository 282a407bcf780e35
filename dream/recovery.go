package dream

import (
	"errors"
	"fmt"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
)

// RecoveredSuffix ends the subject of the commit that records the edits an
// interrupted Dream of an earlier version left on disk.
const RecoveredSuffix = "(recovered after an interrupted run)"

// maxFinished bounds the commits after the ledger's head that one recovery
// reads the trailers of: a step interrupted leaves one; more are commits
// made with the git command line, whose trailers say nothing to Dream.
const maxFinished = 100

// recovery is the first stage of every Dream, restore and start, under the
// Dream lock: whatever a kill interrupted is finished or dropped, from the
// records alone. A step that committed has its files written and is taken
// into the ledger (fileSteps.finish); a staging copy a kill left is
// removed (nothing of it had happened); and what an earlier version left
// uncommitted on disk is committed as Dream's once.
type recovery struct {
	d *Dreamer
	h *held
}

// run recovers and returns the short id of the commit it finished or made
// ("" when there was nothing to do). An error leaves the records as they
// were: the caller must not go on to commit hand edits, which would take
// an interrupted Dream's edits for a person's.
func (rc recovery) run() (string, error) {
	d := rc.d
	if err := removeStage(d.cfg.Workspace); err != nil {
		return "", fmt.Errorf("remove a stopped Dream's working copy: %w", err)
	}
	short, err := rc.legacyIntent()
	if err != nil {
		return "", err
	}
	if s, err := rc.legacyDeep(); err != nil {
		return "", err
	} else if s != "" {
		short = s
	}
	done, err := d.steps(rc.h).finish()
	if err != nil {
		return "", err
	}
	if len(done) > 0 {
		short = done[len(done)-1].Short
	}
	return short, nil
}

func (f fileSteps) finish() ([]gitstore.Commit, error) {
	d, h := f.d, f.h
	head, err := d.repo.Head()
	if err != nil {
		return nil, fmt.Errorf("read the memory repository's head: %w", err)
	}
	from := h.rec.Head
	switch {
	case from == head.SHA:
		return nil, nil
	case from == "":
		// The first start that keeps a head: the files are as the
		// person and the earlier version left them.
		return nil, h.landed(nil, head.SHA, d.now())
	}
	after, err := d.repo.CommitsAfter(from, maxFinished)
	if errors.Is(err, gitstore.ErrNotInHistory) {
		d.log.Warn("the Dream ledger's last commit is not on the memory repository's history (rewritten with git?); taking the branch as it is",
			"ledger", shortOf(from), "head", head.Short)
		return nil, h.landed(nil, head.SHA, d.now())
	}
	if err != nil {
		return nil, fmt.Errorf("read the commits after the Dream ledger's: %w", err)
	}
	var res gitstore.CheckoutResult
	err = d.exclusive(func() error {
		res, err = d.repo.Checkout(from, head.SHA, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write the files of an interrupted step: %w", err)
	}
	var notes []stepNote
	for _, c := range after {
		if n := parseNote(c.Body); n.Kind != "" {
			n.Commit = c.Short
			notes = append(notes, n)
		}
	}
	if err := h.landed(notes, head.SHA, d.now()); err != nil {
		return nil, err
	}
	if len(notes) == 0 && len(res.Written) == 0 {
		return nil, nil // commits made with git: nothing was interrupted
	}
	d.log.Warn("dream finished a step a kill interrupted, from its commit", "commit", head.Short,
		"steps", len(notes), "written", len(res.Written), "kept", len(res.Kept))
	return after, nil
}

// legacyIntent commits the edits an interrupted phase 2 of an earlier
// version left on disk (it edited the files themselves, and its intent
// stands in the ledger) as a Dream commit labelled recovered, never as hand
// edits, and makes the findings it had not applied the pending ones.
func (rc recovery) legacyIntent() (string, error) {
	d, in := rc.d, rc.h.rec.Intent
	if in == nil {
		return "", nil
	}
	diff, err := d.status(in.Scope)
	if err != nil {
		return "", fmt.Errorf("status for an interrupted dream: %w", err)
	}
	same, err := in.unchanged(scopeDir(d.cfg.Workspace, in.Scope))
	if err != nil {
		return "", err
	}
	short := ""
	if !diff.Empty() && !same {
		_, n := countChanges(diff)
		subject := fmt.Sprintf("%s %s from history %d-%d %s", SubjectPrefix,
			plural(n, "change", "changes"), in.First, in.Last, RecoveredSuffix)
		c, err := d.repo.CommitPaths(diffPaths(diff), subject, withNote(d.repo.Summary(diff, summaryCap), stepNote{Scope: in.Scope}))
		if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
			return "", fmt.Errorf("commit an interrupted dream's edits: %w", err)
		}
		short = c.Short
	}
	if err := rc.h.resume(*in); err != nil {
		// The commit stands; the next run finds the files as HEAD has
		// them and only resumes.
		d.log.Warn("dream intent not cleared; the next run will look at it again", "err", err)
	}
	d.log.Warn("dream recovered an interrupted run", "first", in.First, "last", in.Last,
		"pid", in.PID, "started", in.Started, "commit", short, "applied", in.Applied, "findings", len(in.Findings))
	return short, nil
}

// legacyDeep commits, as a deep Dream's, the files a deep Dream of an
// earlier version left written and not committed, and counts that deep
// Dream as done.
func (rc recovery) legacyDeep() (string, error) {
	d, w := rc.d, rc.h.rec.DeepWriting
	if w == nil {
		return "", nil
	}
	st, err := d.status(w.Scope)
	if err != nil {
		return "", fmt.Errorf("status for an interrupted deep Dream: %w", err)
	}
	note := stepNote{Kind: stepDeep, Scope: w.Scope}
	short := ""
	if !st.Empty() {
		body := fmt.Sprintf("Deep Dream (%s), interrupted after writing the files and before committing them; recorded by the next Dream as it left them. Every line taken out is in %s.\n\n%s",
			w.Why, workspace.Cold, d.repo.Summary(st, summaryCap))
		c, err := d.repo.CommitPaths(diffPaths(st), DeepSubject+" recovered after an interruption", withNote(body, note))
		if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
			return "", fmt.Errorf("commit an interrupted deep Dream's files: %w", err)
		}
		short = c.Short
		d.log.Info("recorded an interrupted deep Dream's files", "scope", string(w.Scope), "commit", c.Short)
	}
	head := rc.h.rec.Head
	if head == "" {
		c, err := d.repo.Head()
		if err != nil {
			return "", fmt.Errorf("read the memory repository's head: %w", err)
		}
		head = c.SHA
	}
	if err := rc.h.landed([]stepNote{note}, head, d.now()); err != nil {
		return "", err
	}
	return short, nil
}

// open is the one way into Dream's progress, for a run, a restore and a
// process start: the ledger takes the Dream lock (never waiting: a
// *BusyError when one is held), moves the files of earlier versions in
// once and follows the cursor file; then the recovery finishes what a kill
// interrupted. recovered is the short id of the commit it finished or made
// ("" when none). On a recovery error h is still held (the caller reports
// and ends it).
func (d *Dreamer) open() (h *held, recovered string, err error) {
	h, err = d.ledger.begin(d.now())
	if err != nil {
		return nil, "", err
	}
	recovered, err = recovery{d: d, h: h}.run()
	return h, recovered, err
}

// Recover finishes what an interrupted Dream left, and moves Dream's old
// files into its ledger, at a process start (the gateway's): without it,
// the next Dream, perhaps hours later, would, and an interrupted step's
// files would wait meanwhile. When a Dream runs elsewhere, that one does
// it, and Recover returns nil.
func (d *Dreamer) Recover() error {
	h, _, err := d.open()
	var busy *BusyError
	switch {
	case errors.As(err, &busy):
		return nil
	case h == nil:
		return err
	}
	h.end()
	return err
}
