package workspace

import "errors"

// Path refusals. Every refusal Resolve returns wraps exactly one of them.
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
	// ErrHardLink: the path names a regular file with more than one name
	// (hard link). Another name may lie outside the workspace, so such a
	// file is never used, as a symbolic link is not.
	ErrHardLink = errors.New("path to a file with several hard links")
	// ErrNotAllowed: the path is inside the workspace directory but may not
	// be used: it reaches a directory the Root was told to keep out of
	// reach (Root.Forbid), or a caller's policy forbids it.
	ErrNotAllowed = errors.New("path not allowed")
)

// ErrIO marks a file operation that the system failed (disk full,
// permission denied, an I/O error), as opposed to a refused path or a
// mistake in a tool call: trying again will not help until the operator
// acts. IOFailure's errors wrap it.
var ErrIO = errors.New("file operation failed")

// PathError is a refusal: a sentence for the model plus the rule it broke
// (one of the sentinels above, or a caller's own).
type PathError struct {
	Rule error
	Msg  string
}

func (e *PathError) Error() string { return e.Msg }
func (e *PathError) Unwrap() error { return e.Rule }
