package dream

import (
	"errors"
	"fmt"
	"path"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// ScopeCreatedPrefix starts the subject of the commit holding a new
// scope's first files, as the template makes them: "scope created:
// <scope>". A chat of the scope's audience may have made the folder
// before its first Dream; what it wrote there since is a hand edit, in a
// commit of its own.
const ScopeCreatedPrefix = "scope created: "

// handEdits is the step a scope's batch or deep pass begins with: a scope
// the repository holds no file of yet gets its first files committed
// ("scope created: …"); then edits of the scope's files made since the
// last commit are committed as hand edits, so that the Dream's own commit
// shows its edits alone. It returns the commit the Dream builds on.
func (d *Dreamer) handEdits(h *held, scope audience.Scope, rep *Report) (gitstore.Commit, error) {
	if err := d.createScope(h, scope); err != nil {
		return gitstore.Commit{}, fmt.Errorf("commit the new scope's files: %w", err)
	}
	st, err := d.status(scope)
	if err != nil {
		return gitstore.Commit{}, fmt.Errorf("status before dream: %w", err)
	}
	if !st.Empty() {
		note := stepNote{Kind: stepHandEdit, Scope: scope}
		c, err := d.repo.CommitPaths(diffPaths(st), gitstore.ManualSubject, withNote(d.repo.Summary(st, summaryCap), note))
		switch {
		case errors.Is(err, gitstore.ErrNothingToCommit):
		case err != nil:
			return gitstore.Commit{}, fmt.Errorf("commit hand edits: %w", err)
		default:
			rep.ManualCommit = c.Short
			d.log.Info("dream saved hand edits first", "scope", string(scope), "commit", c.Short, "files", len(st.Files))
			if err := h.landed(nil, c.SHA, d.now()); err != nil {
				d.log.Warn("the ledger did not take in the hand edits' commit; the next Dream does", "err", err)
			}
		}
	}
	head, err := d.repo.Head()
	if err != nil {
		return gitstore.Commit{}, fmt.Errorf("read the memory repository's head: %w", err)
	}
	return head, nil
}

// createScope commits a new scope's first files: the template's memory
// files, whatever a chat wrote in the folder since it made it (that is
// committed next, as a hand edit). It writes the files where the scope's
// folder lacks them. The default scope, and a scope the repository holds
// a file of, are left alone.
func (d *Dreamer) createScope(h *held, scope audience.Scope) error {
	if scope == DefaultScope {
		return nil
	}
	head, err := d.repo.Head()
	if err != nil {
		return err
	}
	var changes []gitstore.Change
	for _, rel := range workspace.MemoryFiles() {
		p := path.Join(scope.Dir(), rel)
		_, ok, err := d.repo.FileAt(head.SHA, p)
		if err != nil {
			return err
		}
		if ok {
			return nil // the scope has been committed before
		}
		data, err := workspacetemplate.Read(rel)
		if err != nil {
			return fmt.Errorf("template %s: %w", rel, err)
		}
		changes = append(changes, gitstore.Change{Path: p, Data: data})
	}
	res, err := d.steps(h).land(step{
		note:     stepNote{Kind: stepScope, Scope: scope},
		subject:  ScopeCreatedPrefix + string(scope),
		body:     "The memory files of a new scope, as the template makes them.",
		base:     head.SHA,
		changes:  changes,
		overLive: true,
	})
	if err != nil {
		return err
	}
	if res.commit.SHA != "" {
		d.log.Info("dream committed the memory files of a new scope", "scope", string(scope), "commit", res.commit.Short)
	}
	return nil
}
