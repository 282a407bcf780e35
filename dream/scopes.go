package dream

import (
	"path"
	"path/filepath"
	"slices"

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

func scopeDir(ws string, s audience.Scope) string {
	return filepath.Join(ws, filepath.FromSlash(s.Dir()))
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
