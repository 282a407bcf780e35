package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
)

// Scopes chooses the memory scopes a Run, a Status or a Restore is about.
// The zero value chooses none: an audience that may read nothing (an
// unknown one, whose Readable is nil) must not end up with every scope.
// AllScopes is for the operator (cron, the CLI, the terminal).
type Scopes struct {
	all  bool
	only []audience.Scope
}

// AllScopes chooses every scope.
func AllScopes() Scopes { return Scopes{all: true} }

// OnlyScopes chooses the scopes listed (an audience's Readable); none when
// the list is empty.
func OnlyScopes(list ...audience.Scope) Scopes {
	return Scopes{only: slices.Clone(list)}
}

// Has reports whether s is chosen.
func (c Scopes) Has(s audience.Scope) bool {
	return c.all || slices.Contains(c.only, s)
}

// All reports whether every scope is chosen.
func (c Scopes) All() bool { return c.all }

// pathIn reports whether the file p belongs to one of the chosen scopes.
func (c Scopes) pathIn(p string) bool {
	s, ok := audience.ScopeOfPath(p)
	return ok && c.Has(s)
}

// scopeFiles are a scope's memory files, workspace-relative.
func scopeFiles(s audience.Scope) []string {
	files := workspace.MemoryFiles()
	for i, f := range files {
		files[i] = path.Join(s.Dir(), f)
	}
	return files
}

// diffPaths lists the files of a diff.
func diffPaths(d gitstore.Diff) []string {
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		out[i] = f.Path
	}
	return out
}

// dir is the folder of the batch's scope: the workspace, or its
// scopes/<name>.
func (r *run) dir() string { return scopeDir(r.d.cfg.Workspace, r.scope) }

func scopeDir(ws string, s audience.Scope) string {
	return filepath.Join(ws, filepath.FromSlash(s.Dir()))
}

// install makes the scope's folder, with the template's memory files, on
// the scope's first Dream when no chat of its audience made it before, and
// commits those files ("init: memory scope"), so that the scope's first
// Dream commit shows Dream's edits alone (and its restore does not remove
// the files).
func (r *run) install() error {
	if r.scope == DefaultScope {
		return nil
	}
	if _, err := os.Lstat(r.dir()); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	base, closeBase, err := r.d.baseRoot()
	if err != nil {
		return err
	}
	defer closeBase()
	if err := base.EnsureScope(r.scope); err != nil {
		return err
	}
	st, err := r.d.status(r.scope)
	if err != nil || st.Empty() {
		return err
	}
	r.d.log.Info("dream created the memory files of a scope", "scope", r.scope, "files", len(st.Files))
	_, err = r.d.repo.CommitPaths(diffPaths(st), ScopeInitSubject, scopeTrailer(r.scope))
	if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
		return fmt.Errorf("commit the new scope's files: %w", err)
	}
	return nil
}

// ScopeInitSubject is the subject of the commit holding a new scope
// folder's files, as the template made them.
const ScopeInitSubject = "init: memory scope"

// scopeTrailer is what a commit body says of its scope: nothing for the
// default scope (whose commits read as they always did), else
// "Scope: <name>".
func scopeTrailer(s audience.Scope) string {
	if s == DefaultScope {
		return ""
	}
	return "Scope: " + string(s)
}

// withTrailer ends a commit body with the scope's trailer.
func withTrailer(body string, s audience.Scope) string {
	t := scopeTrailer(s)
	switch {
	case t == "":
		return body
	case body == "":
		return t
	}
	return strings.TrimRight(body, "\n") + "\n\n" + t
}

// status is the repository's diff of the scope's files alone.
func (d *Dreamer) status(s audience.Scope) (gitstore.Diff, error) {
	return d.repo.Status(OnlyScopes(s).pathIn)
}

// baseRoot is the workspace's Root: the shared one (Deps.Files), or one
// opened for the caller, which calls done.
func (d *Dreamer) baseRoot() (root *workspace.Root, done func(), err error) {
	if d.files != nil {
		return d.files, func() {}, nil
	}
	ws, err := workspace.Open(d.cfg.Workspace)
	if err != nil {
		return nil, nil, err
	}
	return ws, func() { _ = ws.Close() }, nil
}

// scopeRoot opens the workspace rooted at the scope's folder for phase 2
// (workspace.Root.Scope: the same write lock as the chat tools'), made
// from the template when missing.
func (d *Dreamer) scopeRoot(s audience.Scope) (*workspace.Root, func(), error) {
	base, closeBase, err := d.baseRoot()
	if err != nil {
		return nil, nil, err
	}
	if s == DefaultScope {
		return base, closeBase, nil
	}
	sub, err := base.Scope(s)
	if err != nil {
		closeBase()
		return nil, nil, err
	}
	return sub, func() { _ = sub.Close(); closeBase() }, nil
}
