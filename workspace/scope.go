package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/dreamgate/dreamgate/audience"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// Scope opens the folder of memory scope s as a Root of its own: every path
// is confined to that folder (scopes/<name>; the workspace itself for the
// default scope), so the archive, the root's memory files and every other
// scope are out of reach by construction, whatever a model names. It shares
// r's write lock and forbidden directories: within a process one lock still
// guards every memory file. The caller closes it.
//
// A scope's folder is created on first use (EnsureScope). Scope is for the
// chat tools of a conversation's audience and for Dream's edits of one
// scope.
func (r *Root) Scope(s audience.Scope) (*Root, error) {
	if s != audience.Default {
		if err := r.EnsureScope(s); err != nil {
			return nil, err
		}
		// os.Root follows a link that stays inside the workspace: a
		// scope's folder that is a link could be another scope's.
		for _, d := range []string{audience.ScopesDir, s.Dir()} {
			fi, err := r.root.Lstat(d)
			if err != nil {
				return nil, fmt.Errorf("open memory scope %q: %w", s, err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("open memory scope %q: %s is not a directory: %w", s, d, ErrSymlink)
			}
		}
	}
	dir := s.Dir()
	if dir == "" {
		dir = "."
	}
	sub, err := r.root.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open memory scope %q: %w", s, err)
	}
	full := r.dir
	if s != audience.Default {
		full = r.dir + string(os.PathSeparator) + dir
	}
	return &Root{dir: full, root: sub, shared: r.shared}, nil
}

// EnsureScope creates the folder of memory scope s when it is missing, with
// the template's memory files (SOUL.md, USER.md, memory/MEMORY.md): never
// copies of the workspace root's, which hold what the operator said. A
// file that exists is never replaced, even by a process creating the same
// scope at the same moment: each file is written aside and linked into
// place only if nothing is there. The default scope is the workspace root
// and is left alone.
func (r *Root) EnsureScope(s audience.Scope) error {
	if s == audience.Default {
		return nil
	}
	dir := s.Dir() // panics on an unchecked name: a path that might leave scopes/ is a bug
	for _, rel := range MemoryFiles() {
		target := path.Join(dir, rel)
		if _, err := r.root.Lstat(target); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("memory scope %q: %w", s, err)
		}
		data, err := workspacetemplate.Read(rel)
		if err != nil {
			return fmt.Errorf("memory scope %q: template %s: %w", s, rel, err)
		}
		if err := createIn(r.root, target, data, 0o600); err != nil {
			return fmt.Errorf("memory scope %q: create %s: %w", s, rel, err)
		}
	}
	return nil
}

// createIn writes data to rel when rel does not exist, atomically and
// durably: a temp file beside it, fsynced, then hard-linked to rel, which
// fails when something is there already (then nothing is written), then
// the temp name removed.
func createIn(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	dir := path.Dir(rel)
	tmp, err := writeTemp(r, dir, data, perm)
	if err == nil {
		err = r.Link(tmp, rel)
		if errors.Is(err, fs.ErrExist) {
			err = nil // another writer was first: its file stays
		}
	}
	if tmp != "" {
		_ = r.Remove(tmp)
	}
	if err != nil {
		return err
	}
	return syncDir(r, dir)
}
