package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// The workspace and the state directory hold conversations: they and
// everything in them are owner-only (directories 0700, files 0600), set
// where each is created. tightenModes brings what an earlier version, or
// another tool, left readable by others into line at start.

// othersBits are the permission bits of the group and of others.
const othersBits fs.FileMode = 0o077

// privatePaths are the directories tightened with everything below them,
// and the single entries tightened alone, of one config: the workspace and
// the sessions; the state directory itself, the files the gateway keeps
// there (what else a user keeps in it is theirs) and the config file when
// it is kept there too (the default; one in /etc or mounted into a
// container belongs to whoever set it up).
func privatePaths(cfg Config) (trees, single []string) {
	trees = []string{cfg.Workspace, sessionsDir(cfg.StateDir)}
	single = []string{cfg.StateDir, filepath.Join(cfg.StateDir, "inbox.jsonl"), filepath.Join(cfg.StateDir, "gateway.log")}
	if cfg.path != "" && filepath.Dir(cfg.path) == filepath.Clean(cfg.StateDir) {
		single = append(single, cfg.path) // it may hold tokens
	}
	return trees, single
}

// tightenModes removes the group's and others' permissions from the
// entries of privatePaths (symbolic links are resolved for the roots and
// not followed below them), and logs how many it changed. What does not
// exist yet is skipped. What cannot be changed (another owner, a read-only
// mount) is logged and left: the command goes on. The git objects go-git
// writes read-only for all (0444, whatever the umask) are left so: the
// owner-only directories above them already keep everyone else out, and
// go-git would write the next ones the same way.
func tightenModes(logger *slog.Logger, cfg Config) {
	trees, single := privatePaths(cfg)
	var t tightening
	for _, p := range single {
		t.one(p)
	}
	for _, dir := range trees {
		t.tree(dir)
	}
	if t.changed > 0 {
		logger.Warn("made files and directories owner-only: they were open to other users of this machine",
			"workspace", cfg.Workspace, "stateDir", cfg.StateDir, "changed", t.changed)
	}
	if t.failed > 0 {
		logger.Warn("could not make every file and directory owner-only", "failed", t.failed, "first", t.first)
	}
}

// tightening counts what tightenModes changed and failed to change.
type tightening struct {
	changed, failed int
	first           error
}

func (t *tightening) fail(err error) {
	t.failed++
	if t.first == nil {
		t.first = err
	}
}

// one tightens one entry (a link's target).
func (t *tightening) one(p string) {
	info, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		t.fail(err)
	case info.Mode().Perm()&othersBits != 0:
		if err := os.Chmod(p, info.Mode().Perm()&^othersBits); err != nil {
			t.fail(err)
		} else {
			t.changed++
		}
	}
}

// tree tightens a directory and what is below it. It walks the tree only
// when the directory itself is open to others: while it is owner-only,
// nothing below it can be reached by anyone else, and what dreamgate
// creates there is owner-only anyway. So the walk (about 0.1 s for 5,000
// files here) runs once after an upgrade, and a start costs one stat.
func (t *tightening) tree(root string) {
	root, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.fail(err)
		return
	}
	if info, err := os.Stat(root); err != nil || info.Mode().Perm()&othersBits == 0 {
		if err != nil {
			t.fail(err)
		}
		return
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile (a temp file renamed)
		}
		if err != nil {
			t.fail(err)
			return nil // an unreadable directory is skipped
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.fail(err)
			return nil
		}
		perm := info.Mode().Perm()
		if perm&othersBits == 0 || gitObject(root, p, info) {
			return nil
		}
		if err := os.Chmod(p, perm&^othersBits); err != nil {
			t.fail(err)
		} else {
			t.changed++
		}
		return nil
	})
	if err != nil {
		t.fail(err)
	}
}

// tightenTree tightens one tree and returns how many entries it changed,
// and the first error.
func tightenTree(root string) (int, error) {
	var t tightening
	t.tree(root)
	return t.changed, t.first
}

// gitObject reports a read-only git object file (0444) below a .git
// directory's objects folder.
func gitObject(root, p string, info fs.FileInfo) bool {
	if !info.Mode().IsRegular() || info.Mode().Perm() != 0o444 {
		return false
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return strings.Contains(filepath.ToSlash(rel), ".git/objects/")
}
