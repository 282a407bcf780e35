package workspace

import "errors"

// Path refusals. Every error Resolve returns wraps exactly one of them.
var (
	// ErrInvalidPath: the path is empty, too long, not valid UTF-8, holds a
	// NUL or control character, a backslash, or passes through a file.
	ErrInvalidPath = errors.New("invalid path")
	// ErrOutsideWorkspace: the path is absolute, home-relative, or its ".."
	// components climb above the workspace.
	ErrOutsideWorkspace = errors.New("path outside the workspace")
	// ErrSymlink: a component of the path is a symbolic link. Links are
	// never followed, wherever they point.
	ErrSymlink = errors.New("path through a symbolic link")
)

// PathError is a refusal: a sentence for the model plus the rule it broke
// (one of the sentinels above, or a caller's own).
type PathError struct {
	Rule error
	Msg  string
}

func (e *PathError) Error() string { return e.Msg }
func (e *PathError) Unwrap() error { return e.Rule }
