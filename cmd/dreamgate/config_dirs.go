package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// sessionsDir is where the conversations live: <stateDir>/sessions.
func sessionsDir(stateDir string) string { return filepath.Join(stateDir, "sessions") }

// checkStateDir refuses a stateDir whose sessions directory lies inside
// the workspace, and a workspace inside the sessions directory: either way
// the assistant's file tools, confined to the workspace, could read every
// person's conversation. (The default workspace, ~/.dreamgate/workspace,
// is inside the default stateDir but beside its sessions, which is fine.)
// Paths are compared after resolving symbolic links, so a link does not
// hide an overlap.
func checkStateDir(c *Config) error {
	ws, err := realPath(c.Workspace)
	if err != nil {
		return &configError{field: "workspace", msg: fmt.Sprintf("cannot resolve %q: %v", c.Workspace, err)}
	}
	sessions, err := realPath(sessionsDir(c.StateDir))
	if err != nil {
		return &configError{field: "stateDir", msg: fmt.Sprintf("cannot resolve %q: %v", c.StateDir, err)}
	}
	switch {
	case within(sessions, ws):
		return &configError{field: "stateDir", msg: fmt.Sprintf(
			"its sessions directory %q is inside the workspace %q, where the assistant's file tools could read every conversation; "+
				"set stateDir and workspace to separate directories", sessions, ws)}
	case within(ws, sessions):
		return &configError{field: "workspace", msg: fmt.Sprintf(
			"%q is inside stateDir's sessions directory %q, where the assistant's file tools could read every conversation; "+
				"set stateDir and workspace to separate directories", ws, sessions)}
	}
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// realPath makes p absolute and resolves the symbolic links of the part
// of it that exists; the missing rest is appended as written.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
