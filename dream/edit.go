package dream

import (
	"bytes"
	"errors"
	"fmt"
	"path"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/memory"
)

// A hand edit of a scope's memory file, made as a step: where the memory
// repository has no workspace (the PostgreSQL engine's), a person's edit
// reaches memory only this way (dreamgate memory edit); on files it is the
// same as editing the file, saved at once. It is committed as hand edits
// are ("manual: edits outside Dream"), so /dream-log shows it and
// /dream-restore undoes it like any other change.

// EditResult is what Edit did.
type EditResult struct {
	// Commit is the edit's commit (zero when the file already held it).
	Commit gitstore.Commit
	// Diff is the change it made.
	Diff gitstore.Diff
	// Saved is the commit of hand edits of the scope's files made before
	// it (files only; zero when none).
	Saved string
}

// Edit replaces scope's memory file rel (one of memory.TierFiles) with
// data, as one step under the Dream lock (a *BusyError when a Dream or a
// restore holds it): a scope the repository holds no file of gets its
// first files first, edits made on disk are saved first; then the edit is
// committed and written. Nothing changes when the file holds data already.
func (d *Dreamer) Edit(scope audience.Scope, rel string, data []byte) (EditResult, error) {
	if !memory.IsTierFile(rel) {
		return EditResult{}, fmt.Errorf("edit %q: %w", rel, memory.ErrNotMemory)
	}
	if _, err := audience.ParseScope(string(scope)); err != nil {
		return EditResult{}, fmt.Errorf("edit: %w", err)
	}
	h, _, err := d.open()
	if h == nil {
		return EditResult{}, err
	}
	defer h.end()
	if err != nil {
		return EditResult{}, fmt.Errorf("edit: %w", err)
	}
	var rep Report
	head, err := d.handEdits(h, scope, &rep)
	if err != nil {
		return EditResult{}, fmt.Errorf("edit: %w", err)
	}
	out := EditResult{Saved: rep.ManualCommit}
	p := path.Join(scope.Dir(), rel)
	old, ok, err := d.repo.FileAt(head.SHA, p)
	if err != nil {
		return out, fmt.Errorf("edit: read %s: %w", p, err)
	}
	if ok && bytes.Equal(old, data) {
		return out, nil
	}
	changes := []gitstore.Change{{Path: p, Data: data}}
	if out.Diff, err = d.repo.DiffChanges(head.SHA, changes); err != nil {
		return out, fmt.Errorf("edit: %w", err)
	}
	res, err := d.steps(h).land(step{
		note:    stepNote{Kind: stepHandEdit, Scope: scope},
		subject: gitstore.ManualSubject,
		body:    d.repo.Summary(out.Diff, summaryCap),
		base:    head.SHA,
		changes: changes,
	})
	if errors.Is(err, errChangedMeanwhile) {
		return out, fmt.Errorf("edit: %s changed on disk meanwhile; edit it again", p)
	}
	if err != nil {
		return out, fmt.Errorf("edit: %w", err)
	}
	out.Commit = res.commit
	d.log.Info("memory file edited by hand", "scope", string(scope), "file", rel, "commit", res.commit.Short)
	return out, nil
}
