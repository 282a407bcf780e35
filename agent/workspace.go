package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Limits on a path a model may name.
const (
	maxPathBytes      = 1024
	maxComponentBytes = 255
)

// Workspace is the directory the file tools work in. All access goes through
// an os.Root opened on it, so no path can reach outside the directory even if
// a link appears there after Resolve looked.
type Workspace struct {
	root *os.Root
	// mu serialises the read-modify-write of edits and writes made through
	// this Workspace, so two sessions editing one file cannot lose an edit.
	mu sync.Mutex
}

// OpenWorkspace opens dir, which must exist and be a directory. The caller
// closes the Workspace when the tools are no longer used.
func OpenWorkspace(dir string) (*Workspace, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Workspace{root: root}, nil
}

// Exclusive runs f while no write or edit through this Workspace can run,
// for work that changes its files by other means (a restore from the
// memory repository) and must not interleave with a tool's
// read-modify-write.
func (w *Workspace) Exclusive(f func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return f()
}

// Close releases the workspace directory.
func (w *Workspace) Close() error {
	if err := w.root.Close(); err != nil {
		return fmt.Errorf("close workspace: %w", err)
	}
	return nil
}

// Resolve is the confinement check every file tool goes through. It turns p,
// a path chosen by a model, into a clean workspace-relative path ("." for the
// workspace itself), or refuses it with an error wrapping ErrInvalidPath,
// ErrOutsideWorkspace, ErrSymlink or ErrNotAllowed. write selects the
// policy's write rules.
//
// Refused: empty, over 1024 bytes or a component over 255 bytes, NUL and
// control characters, invalid UTF-8, backslashes, components starting or
// ending with a space, absolute and "~" paths, ".." climbing out of the
// workspace, a symbolic link at any existing component, a path through a
// regular file, and whatever the policy forbids — by name, case-insensitively,
// and by identity: a path naming the same file or directory as a denied
// existing one (a hard link, another spelling on a case-insensitive file
// system) is denied too. Missing components are fine (the file may be about
// to be created).
func (w *Workspace) Resolve(p string, pol Policy, write bool) (string, error) {
	rel, _, err := w.resolve(p, pol, write)
	return rel, err
}

// resolve is Resolve that also returns the Lstat of the target, nil when it
// does not exist, so tools can detect a file swapped after the check.
func (w *Workspace) resolve(p string, pol Policy, write bool) (string, fs.FileInfo, error) {
	rel, err := cleanPath(p)
	if err != nil {
		return "", nil, err
	}
	if err := pol.check(rel, write); err != nil {
		return "", nil, err
	}
	chain, err := w.walk(rel)
	if err != nil {
		return "", nil, err
	}
	if err := w.checkIdentity(pol, rel, chain, write); err != nil {
		return "", nil, err
	}
	var target fs.FileInfo
	if rel == "." {
		if target, err = w.root.Lstat("."); err != nil {
			return "", nil, ioFailure("check", rel, err)
		}
	} else if len(chain) == strings.Count(rel, "/")+1 {
		target = chain[len(chain)-1]
	}
	return rel, target, nil
}

// cleanPath applies the purely lexical rules.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", &pathError{ErrInvalidPath, "The path is empty."}
	case len(p) > maxPathBytes:
		return "", &pathError{ErrInvalidPath, fmt.Sprintf("The path is longer than %d bytes.", maxPathBytes)}
	case strings.IndexByte(p, 0) >= 0:
		return "", &pathError{ErrInvalidPath, "The path contains a NUL byte."}
	case !utf8.ValidString(p):
		return "", &pathError{ErrInvalidPath, "The path is not valid UTF-8."}
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", &pathError{ErrInvalidPath, "The path contains a control character."}
	case strings.Contains(p, `\`):
		return "", &pathError{ErrInvalidPath, quote(p) + " contains a backslash; separate directories with /."}
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", &pathError{ErrOutsideWorkspace, "Absolute paths are not allowed; give a path relative to the workspace."}
	case p == "~" || strings.HasPrefix(p, "~/"):
		return "", &pathError{ErrOutsideWorkspace, "Paths starting with ~ are not allowed; give a path relative to the workspace."}
	}
	rel := path.Clean(p)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &pathError{ErrOutsideWorkspace, quote(p) + " leaves the workspace."}
	}
	if rel == "." {
		return rel, nil
	}
	for c := range strings.SplitSeq(rel, "/") {
		if len(c) > maxComponentBytes {
			return "", &pathError{ErrInvalidPath, fmt.Sprintf("A component of the path is longer than %d bytes.", maxComponentBytes)}
		}
		if strings.TrimSpace(c) != c {
			return "", &pathError{ErrInvalidPath, quote(c) + " starts or ends with a space."}
		}
		// Windows ignores trailing dots and reads "name:stream" as the same
		// file, which would let a model reach a denied file by another name.
		if runtime.GOOS == "windows" && (strings.HasSuffix(c, ".") || strings.Contains(c, ":")) {
			return "", &pathError{ErrInvalidPath, quote(c) + " ends with a dot or contains a colon."}
		}
	}
	return rel, nil
}

// walk Lstats each component of rel from the top and refuses links and paths
// through files. It returns the infos of the components that exist, in
// order; components after the first missing one are not looked at.
func (w *Workspace) walk(rel string) ([]fs.FileInfo, error) {
	if rel == "." {
		return nil, nil
	}
	parts := strings.Split(rel, "/")
	chain := make([]fs.FileInfo, 0, len(parts))
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := w.root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, ioFailure("check", sub, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &pathError{ErrSymlink, quote(sub) + " is a symbolic link; links are not followed."}
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return nil, &pathError{ErrInvalidPath, quote(sub) + " is a file, so " + quote(rel) + " cannot be inside it."}
		}
		chain = append(chain, fi)
	}
	return chain, nil
}

// checkIdentity refuses a path whose existing components are the very files
// or directories a plain deny entry names, whatever spelling reached them.
func (w *Workspace) checkIdentity(pol Policy, rel string, chain []fs.FileInfo, write bool) error {
	if len(chain) == 0 {
		return nil
	}
	deny := func(entries []string, msg string) error {
		for _, e := range entries {
			if hasMeta(e) {
				continue
			}
			fi, err := w.root.Lstat(strings.TrimSuffix(path.Clean(e), "/"))
			if err != nil {
				continue
			}
			for _, c := range chain {
				if os.SameFile(c, fi) {
					return &pathError{ErrNotAllowed, quote(rel) + msg}
				}
			}
		}
		return nil
	}
	if err := deny(pol.DenyRead, " is private to dreamgate and may not be accessed."); err != nil {
		return err
	}
	if write {
		return deny(pol.DenyWrite, " is maintained by dreamgate and may not be written.")
	}
	return nil
}

// ioFailure describes a failed file operation by its workspace-relative path
// and the system's reason, leaving out the absolute path os errors carry.
func ioFailure(op, rel string, err error) error {
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

func (e *ioError) Error() string { return e.msg }
func (e *ioError) Unwrap() error { return e.err }

// quote shows a model-supplied path in an error, shortened so a hostile
// megabyte of path does not come back as a megabyte of error.
func quote(s string) string {
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
