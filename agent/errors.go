package agent

import (
	"errors"

	"github.com/dreamgate/dreamgate/workspace"
)

// Path refusals. Every error Resolve returns wraps exactly one of them; its
// text is one sentence naming the rule and the workspace-relative path
// (never the workspace's absolute location), fit to send to a model. The
// first three are the workspace's own refusals.
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
	// ErrNotAllowed: the path is inside the workspace but the Policy forbids
	// this access.
	ErrNotAllowed = errors.New("path not allowed")
)

// ErrNoModel is returned by Loop.Run when Loop.Model is nil.
var ErrNoModel = errors.New("agent loop has no model")

// pathError is a refusal: a sentence for the model plus the rule it broke.
type pathError struct {
	rule error
	msg  string
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.rule }
