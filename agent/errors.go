package agent

import (
	"errors"

	"github.com/dreamgate/dreamgate/workspace"
)

// Path refusals. Every error Resolve returns wraps exactly one of them; its
// text is one sentence naming the rule and the workspace-relative path
// (never the workspace's absolute location), fit to send to a model. The
// first four are the workspace's own refusals.
var (
	// ErrInvalidPath: the path is empty, too long, not valid UTF-8, holds a
	// NUL or control character, a backslash, or passes through a file.
	ErrInvalidPath = workspace.ErrInvalidPath
	// ErrOutsideWorkspace: the path is absolute, home-relative, or its ".."
	// components climb above the workspace.
	ErrOutsideWorkspace = workspace.ErrOutsideWorkspace
	// ErrSymlink: a component of the path is a symbolic link. Links are
	// never followed, wherever they point.
	ErrSymlink = workspace.ErrSymlink
	// ErrHardLink: the path names a regular file with more than one hard
	// link; another name may be outside the workspace.
	ErrHardLink = workspace.ErrHardLink
	// ErrNotAllowed: the path is inside the workspace but the Policy forbids
	// this access, or it reaches a directory the workspace keeps out of
	// reach (workspace.Root.Forbid: the sessions directory).
	ErrNotAllowed = workspace.ErrNotAllowed
)

// ErrIO marks a tool error that is the system's, not the model's: a file
// operation failed (disk full, permission denied). A run that keeps
// hitting one ends with StopToolFailed, not StopRepeated.
var ErrIO = workspace.ErrIO

// ErrNoModel is returned by Loop.Run when Loop.Model is nil.
var ErrNoModel = errors.New("agent loop has no model")

// pathError is a refusal: a sentence for the model plus the rule it broke.
type pathError struct {
	rule error
	msg  string
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.rule }
