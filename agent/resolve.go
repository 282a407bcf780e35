package agent

import (
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/dreamgate/dreamgate/workspace"
)

// Resolve is the confinement check every file tool goes through. It turns
// p, a path chosen by a model, into a clean workspace-relative path ("."
// for the workspace itself), or refuses it with an error wrapping
// ErrInvalidPath, ErrOutsideWorkspace, ErrSymlink or ErrNotAllowed. write
// selects the policy's write rules.
//
// The workspace refuses what no tool may ever use (see
// workspace.Root.Resolve: malformed names, absolute and "~" paths, ".."
// out of the workspace, links, paths through files); on top of that the
// policy refuses by name, case-insensitively, and by identity: a path
// naming the same file or directory as a denied existing one (a hard link,
// another spelling on a case-insensitive file system) is denied too.
func Resolve(w *workspace.Root, p string, pol Policy, write bool) (string, error) {
	rel, _, err := resolve(w, p, pol, write)
	return rel, err
}

// resolve is Resolve that also returns the Lstat of the target, nil when it
// does not exist, so tools can detect a file swapped after the check.
func resolve(w *workspace.Root, p string, pol Policy, write bool) (string, fs.FileInfo, error) {
	// The lexical rules first, so a malformed name is refused as such
	// before the policy looks at it.
	rel, err := workspace.Clean(p)
	if err != nil {
		return "", nil, err
	}
	if err := pol.check(rel, write); err != nil {
		return "", nil, err
	}
	rel, chain, err := w.Resolve(rel)
	if err != nil {
		return "", nil, err
	}
	if err := checkIdentity(w, pol, rel, chain, write); err != nil {
		return "", nil, err
	}
	var target fs.FileInfo
	if rel == "." {
		if target, err = w.Lstat("."); err != nil {
			return "", nil, ioFailure("check", rel, err)
		}
	} else if len(chain) == strings.Count(rel, "/")+1 {
		target = chain[len(chain)-1]
	}
	return rel, target, nil
}

// checkIdentity refuses a path whose existing components are the very files
// or directories a plain deny entry names, whatever spelling reached them.
func checkIdentity(w *workspace.Root, pol Policy, rel string, chain []fs.FileInfo, write bool) error {
	if len(chain) == 0 {
		return nil
	}
	deny := func(entries []string, msg string) error {
		for _, e := range entries {
			if hasMeta(e) {
				continue
			}
			fi, err := w.Lstat(strings.TrimSuffix(path.Clean(e), "/"))
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

// ioFailure describes a failed file operation without the absolute path
// os errors carry.
func ioFailure(op, rel string, err error) error { return workspace.IOFailure(op, rel, err) }

// quote shows a model-supplied path in an error, shortened.
func quote(s string) string { return workspace.Quote(s) }
