package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Limits on a path a model may name.
const (
	MaxPathBytes      = 1024
	MaxComponentBytes = 255
)

// Resolve is the confinement check for a path a model chose. It turns p
// into a clean workspace-relative path ("." for the workspace itself) and
// returns the Lstat of each of its components that exists, in order
// (components after the first missing one are not looked at), or refuses
// it with an error wrapping ErrInvalidPath, ErrOutsideWorkspace,
// ErrSymlink, ErrHardLink or ErrNotAllowed whose text is one sentence fit to send to the model (the
// workspace-relative path, never the workspace's location).
//
// Refused: empty, over 1024 bytes or a component over 255 bytes, NUL and
// control characters, invalid UTF-8, backslashes, components starting or
// ending with a space, absolute and "~" paths, ".." climbing out of the
// workspace, a symbolic link at any existing component and a path through
// a regular file. Missing components are fine (the file may be about to be
// created). Which files a tool may use is the caller's policy.
func (r *Root) Resolve(p string) (string, []fs.FileInfo, error) {
	rel, err := cleanPath(p)
	if err != nil {
		return "", nil, err
	}
	chain, err := r.walk(rel)
	if err != nil {
		return "", nil, err
	}
	return rel, chain, nil
}

// cleanPath applies the purely lexical rules.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", &PathError{ErrInvalidPath, "The path is empty."}
	case len(p) > MaxPathBytes:
		return "", &PathError{ErrInvalidPath, fmt.Sprintf("The path is longer than %d bytes.", MaxPathBytes)}
	case strings.IndexByte(p, 0) >= 0:
		return "", &PathError{ErrInvalidPath, "The path contains a NUL byte."}
	case !utf8.ValidString(p):
		return "", &PathError{ErrInvalidPath, "The path is not valid UTF-8."}
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", &PathError{ErrInvalidPath, "The path contains a control character."}
	case strings.Contains(p, `\`):
		return "", &PathError{ErrInvalidPath, Quote(p) + " contains a backslash; separate directories with /."}
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", &PathError{ErrOutsideWorkspace, "Absolute paths are not allowed; give a path relative to the workspace."}
	case p == "~" || strings.HasPrefix(p, "~/"):
		return "", &PathError{ErrOutsideWorkspace, "Paths starting with ~ are not allowed; give a path relative to the workspace."}
	}
	rel := path.Clean(p)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &PathError{ErrOutsideWorkspace, Quote(p) + " leaves the workspace."}
	}
	if rel == "." {
		return rel, nil
	}
	for c := range strings.SplitSeq(rel, "/") {
		if len(c) > MaxComponentBytes {
			return "", &PathError{ErrInvalidPath, fmt.Sprintf("A component of the path is longer than %d bytes.", MaxComponentBytes)}
		}
		if strings.TrimSpace(c) != c {
			return "", &PathError{ErrInvalidPath, Quote(c) + " starts or ends with a space."}
		}
		// Windows ignores trailing dots and reads "name:stream" as the same
		// file, which would let a model reach a denied file by another name.
		if runtime.GOOS == "windows" && (strings.HasSuffix(c, ".") || strings.Contains(c, ":")) {
			return "", &PathError{ErrInvalidPath, Quote(c) + " ends with a dot or contains a colon."}
		}
	}
	return rel, nil
}

// walk Lstats each component of rel from the top and refuses links and paths
// through files. It returns the infos of the components that exist, in
// order; components after the first missing one are not looked at.
func (r *Root) walk(rel string) ([]fs.FileInfo, error) {
	if rel == "." {
		return nil, nil
	}
	parts := strings.Split(rel, "/")
	chain := make([]fs.FileInfo, 0, len(parts))
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := r.root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, IOFailure("check", sub, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &PathError{ErrSymlink, Quote(sub) + " is a symbolic link; links are not followed."}
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return nil, &PathError{ErrInvalidPath, Quote(sub) + " is a file, so " + Quote(rel) + " cannot be inside it."}
		}
		if err := checkLinks(sub, fi); err != nil {
			return nil, err
		}
		if fi.IsDir() && r.isForbidden(fi) {
			return nil, &PathError{ErrNotAllowed, Quote(sub) + " holds dreamgate's own state (the conversations) and may not be accessed."}
		}
		chain = append(chain, fi)
	}
	return chain, nil
}

// IOFailure describes a failed file operation by its workspace-relative path
// and the system's reason, leaving out the absolute path os errors carry.
// The error wraps ErrIO and err.
func IOFailure(op, rel string, err error) error {
	var (
		pe    *fs.PathError
		le    *os.LinkError
		errno syscall.Errno
	)
	reason := "unexpected error"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reason = "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		reason = "permission denied"
	case errors.As(err, &errno):
		reason = errno.Error()
	case errors.As(err, &pe):
		reason = pe.Err.Error()
	case errors.As(err, &le):
		reason = le.Err.Error()
	}
	return &ioError{msg: fmt.Sprintf("cannot %s %s: %s", op, rel, reason), err: err}
}

// ioError keeps the full cause for errors.Is while its text stays free of
// absolute paths.
type ioError struct {
	msg string
	err error
}

func (e *ioError) Error() string   { return e.msg }
func (e *ioError) Unwrap() []error { return []error{ErrIO, e.err} }

// Quote shows a model-supplied path in an error, shortened so a hostile
// megabyte of path does not come back as a megabyte of error.
func Quote(s string) string {
	const maxShown = 120
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Clean applies Resolve's lexical rules alone (no file is looked at) and
// returns the clean workspace-relative path, or a refusal as Resolve does.
func Clean(p string) (string, error) { return cleanPath(p) }

// checkLinks refuses a regular file with more than one name. A hard link is
// the same file under another name, and the other name may be outside the
// workspace (a session file, a key): reading or editing it through the
// workspace would reach that file, as following a symbolic link would.
func checkLinks(rel string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return nil
	}
	if n := linkCount(fi); n > 1 {
		return &PathError{ErrHardLink, fmt.Sprintf("%s has %d hard links (names for the same file); "+
			"another name may be outside the workspace, so files with several links are not used.", Quote(rel), n)}
	}
	return nil
}
