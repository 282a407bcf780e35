package main

import (
	"errors"
	"fmt"
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
// the sessions, and of the state directory itself and the files the
// gateway keeps there (what else a user keeps in it is theirs).
func privatePaths(cfg Config) (trees, single []string) {
	trees = []string{cfg.Workspace, sessionsDir(cfg.StateDir)}
	single = []string{cfg.StateDir, filepath.Join(cfg.StateDir, "inbox.jsonl"), filepath.Join(cfg.StateDir, "gateway.log")}
	if cfg.path != "" {
		single = append(single, cfg.path) // it may hold tokens
	}
	return trees, single
}

// tightenModes removes the group's and others' permissions from the
// entries of privatePaths (symbolic links are resolved for the roots and
// not followed below them), and logs how many it changed. What does not
// exist yet is skipped. The git objects go-git writes read-only for all
// (0444, whatever the umask) are left so: the owner-only directories above
// them already keep everyone else out, and go-git would write the next
// ones the same way.
func tightenModes(logger *slog.Logger, cfg Config) error {
	trees, single := privatePaths(cfg)
	changed := 0
	for _, p := range single {
		n, err := tightenOne(p)
		if err != nil {
			return err
		}
		changed += n
	}
	for _, dir := range trees {
		n, err := tightenTree(dir)
		if err != nil {
			return fmt.Errorf("make %s owner-only: %w", dir, err)
		}
		changed += n
	}
	if changed > 0 {
		logger.Warn("made files and directories owner-only: they were open to other users of this machine",
			"workspace", cfg.Workspace, "stateDir", cfg.StateDir, "changed", changed)
	}
	return nil
}

// tightenOne tightens one entry (a link's target); it returns 1 when it
// changed it.
func tightenOne(p string) (int, error) {
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("make %s owner-only: %w", p, err)
	}
	if info.Mode().Perm()&othersBits == 0 {
		return 0, nil
	}
	if err := os.Chmod(p, info.Mode().Perm()&^othersBits); err != nil {
		return 0, fmt.Errorf("make %s owner-only: %w", p, err)
	}
	return 1, nil
}

// tightenTree is tightenModes for one directory; it returns how many
// entries it changed. It walks the tree only when the directory itself is
// open to others: while it is owner-only, nothing below it can be reached
// by anyone else, and what dreamgate creates there is owner-only anyway.
// So the walk (about 0.1 s for 5,000 files here) runs once after an
// upgrade, and a start costs one stat.
func tightenTree(root string) (int, error) {
	root, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if info, err := os.Stat(root); err != nil || info.Mode().Perm()&othersBits == 0 {
		return 0, err
	}
	changed := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile (a temp file renamed)
		}
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile (a temp file renamed)
		}
		if err != nil {
			return err
		}
		perm := info.Mode().Perm()
		if perm&othersBits == 0 || gitObject(root, p, info) {
			return nil
		}
		if err := os.Chmod(p, info.Mode().Perm()&^othersBits); err != nil {
			return err
		}
		changed++
		return nil
	})
	return changed, err
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
