package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolveDirs makes workspace and stateDir absolute: "~/" is the home
// directory, and a relative path is taken from the config file's folder,
// not from the current directory, so that the systemd unit (whose current
// directory is /) and a shell in any folder open the same workspace. With
// no config file both keep their defaults, which start with "~/".
func resolveDirs(c *Config) *configError {
	base := ""
	if c.path != "" {
		abs, err := filepath.Abs(c.path)
		if err != nil {
			return &configError{msg: fmt.Sprintf("cannot resolve the config file's folder: %v", err)}
		}
		base = filepath.Dir(abs)
	}
	for _, d := range []struct {
		field string
		p     *string
	}{{"workspace", &c.Workspace}, {"stateDir", &c.StateDir}} {
		p := *d.p
		switch {
		case strings.TrimSpace(p) == "":
			continue // Validate says it must not be empty
		case p == "~" || strings.HasPrefix(p, "~/"):
			home, err := os.UserHomeDir()
			if err != nil {
				return &configError{field: d.field, msg: fmt.Sprintf("starts with ~ but the home directory is unknown (%v); write the path in full", err)}
			}
			p = filepath.Join(home, p[1:])
		case strings.HasPrefix(p, "~"):
			return &configError{field: d.field, msg: fmt.Sprintf("only ~/ (the home directory of the user running dreamgate) is understood, not %q; write the path in full", p)}
		case !filepath.IsAbs(p) && base != "":
			p = filepath.Join(base, p)
		}
		*d.p = filepath.Clean(p)
	}
	return nil
}

// sessionsDir is where the conversations live: <stateDir>/sessions.
func sessionsDir(stateDir string) string { return filepath.Join(stateDir, "sessions") }

// checkStateDir refuses a stateDir whose sessions directory lies inside
// the workspace, and a workspace inside the sessions directory: either way
// the assistant's file tools, confined to the workspace, could read every
// person's conversation. (The default workspace, ~/.dreamgate/workspace,
// is inside the default stateDir but beside its sessions, which is fine.)
// Paths are compared after resolving symbolic links, so a link does not
// hide an overlap.
//
// An operator's command run by an account that may not look into the
// folders (the gateway's are its own) skips the check: it changes nothing
// there, and it is told whose they are when it tries to reach them.
func checkStateDir(c *Config) error {
	unreadable := func(err error) bool { return c.withoutSecrets && errors.Is(err, fs.ErrPermission) }
	ws, err := realPath(c.Workspace)
	if unreadable(err) {
		return nil
	}
	if err != nil {
		return &configError{field: "workspace", msg: fmt.Sprintf("cannot resolve %q: %v", c.Workspace, err)}
	}
	sessions, err := realPath(sessionsDir(c.StateDir))
	if unreadable(err) {
		return nil
	}
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
