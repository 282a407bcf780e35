package dream

import (
	"bytes"
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

// stage is the copy of a scope's files a Dream works on
// (memory/.dream_stage/ in the workspace): SOUL.md, USER.md,
// memory/MEMORY.md and memory/COLD.md as the commit the step builds on
// holds them. Phase 2's tools are rooted at it and the upkeep writes it;
// the scope's files themselves change only when the step lands, from its
// commit. A kill leaves the copy behind and nothing else: the next
// recovery removes it. One Dream at a time holds the Dream lock, so one
// stage at a time exists.
type stage struct {
	scope audience.Scope
	base  string // the full id of the commit the copy was made from
	dir   string
	root  *workspace.Root
	// orig holds base's version of each file (nil: none), by path relative
	// to the scope's folder.
	orig map[string][]byte
}

// stageFiles are the files a stage holds, relative to the scope's folder.
var stageFiles = append(workspace.MemoryFiles(), workspace.Cold)

func stageDir(ws string) string { return filepath.Join(ws, filepath.FromSlash(workspace.DreamStage)) }

// removeStage removes a stage a stopped Dream left.
func removeStage(ws string) error { return os.RemoveAll(stageDir(ws)) }

// newStage copies the scope's files as the commit base holds them.
func (d *Dreamer) newStage(scope audience.Scope, base string) (*stage, error) {
	dir := stageDir(d.cfg.Workspace)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear the Dream's working copy: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, workspace.MemoryDir), 0o700); err != nil {
		return nil, fmt.Errorf("make the Dream's working copy: %w", err)
	}
	st := &stage{scope: scope, base: base, dir: dir, orig: map[string][]byte{}}
	for _, rel := range stageFiles {
		data, ok, err := d.repo.FileAt(base, path.Join(scope.Dir(), rel))
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("copy %s for the Dream: %w", rel, err)
		}
		if !ok {
			continue
		}
		st.orig[rel] = data
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), data, 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("copy %s for the Dream: %w", rel, err)
		}
	}
	root, err := workspace.Open(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	st.root = root
	return st, nil
}

// close removes the copy.
func (s *stage) close() {
	_ = s.root.Close()
	_ = os.RemoveAll(s.dir)
}

// files reads the memory files of the copy, for a prompt.
func (s *stage) files() ([]memFile, error) { return readMemoryFiles(s.dir) }

// read is the copy's file rel (nil when missing).
func (s *stage) read(rel string) ([]byte, error) {
	b, err := s.root.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// changes lists the files of the copy that differ from base's, as
// workspace-relative changes of a commit.
func (s *stage) changes() ([]gitstore.Change, error) {
	var out []gitstore.Change
	for _, rel := range stageFiles {
		now, err := s.read(rel)
		if err != nil {
			return nil, fmt.Errorf("read the Dream's %s: %w", rel, err)
		}
		old, had := s.orig[rel]
		switch {
		case now == nil && !had:
		case now == nil:
			out = append(out, gitstore.Change{Path: path.Join(s.scope.Dir(), rel), Remove: true})
		case !had || !bytes.Equal(now, old):
			out = append(out, gitstore.Change{Path: path.Join(s.scope.Dir(), rel), Data: now})
		}
	}
	return out, nil
}

// rebaseLines makes a memory file from its version old, the step's
// version ours and a version theirs someone wrote meanwhile: the step's
// change (the lines it removed, the lines it added) applied to theirs. A
// memory file is a list of lines, so a removed line is removed where it
// still stands and an added line goes after the line that came before it
// in ours (at the top when none of those is left). Lines theirs added or
// removed stay as they are.
func rebaseLines(old, ours, theirs []byte) []byte {
	if bytes.Equal(old, theirs) {
		return ours
	}
	if bytes.Equal(old, ours) {
		return theirs
	}
	o, u, t := splitLines(old), splitLines(ours), splitLines(theirs)
	count := func(ls []string) map[string]int {
		m := map[string]int{}
		for _, l := range ls {
			m[l]++
		}
		return m
	}
	inOld, inOurs := count(o), count(u)
	out := slices.Clone(t)
	for l, n := range inOld {
		for range n - inOurs[l] {
			if i := slices.Index(out, l); i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		}
	}
	seen := map[string]int{}
	for i, l := range u {
		seen[l]++
		if seen[l] <= inOld[l] {
			continue // not one the step added
		}
		at := 0
		for j := i - 1; j >= 0; j-- {
			if k := slices.Index(out, u[j]); k >= 0 {
				at = k + 1
				break
			}
		}
		out = slices.Insert(out, at, l)
	}
	return []byte(strings.Join(out, ""))
}

// splitLines cuts a file into lines, each with its line break (the last
// one given one, so that lines compare and join alike).
func splitLines(b []byte) []string {
	var out []string
	for l := range strings.Lines(string(b)) {
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		out = append(out, l)
	}
	return out
}
