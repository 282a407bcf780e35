package gitstore

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error a Store method returns for one of these
// conditions wraps the sentinel, so callers decide with errors.Is and pick
// their own user-facing sentence; the wrapped text is for logs.
var (
	// ErrNoTrackedFiles: Open was given no tracked files (Options.Tracked).
	ErrNoTrackedFiles = errors.New("no tracked files given")

	// ErrNotARepository: the workspace has a .git entry that go-git cannot
	// open as a repository (empty, corrupt, or a dangling gitdir link).
	ErrNotARepository = errors.New("not a git repository")

	// ErrNestedRepository: the workspace has no repository of its own but
	// lies inside another one. Open refuses to create a repository there.
	// The error is a *NestedRepositoryError naming the outer directory.
	ErrNestedRepository = errors.New("workspace is inside another git repository")

	// ErrInvalidRevision: the revision is not 4 to 40 hexadecimal characters.
	ErrInvalidRevision = errors.New("invalid revision")

	// ErrUnknownRevision: no commit has that id or id prefix.
	ErrUnknownRevision = errors.New("unknown revision")

	// ErrAmbiguousRevision: more than one commit starts with that prefix.
	// The error is an *AmbiguousRevisionError listing them.
	ErrAmbiguousRevision = errors.New("ambiguous revision")

	// ErrNothingToCommit: no tracked file differs from HEAD. No commit was
	// made (the store never makes an empty commit).
	ErrNothingToCommit = errors.New("nothing to commit")

	// ErrNotTracked: a path given to CommitPaths is not one of the files
	// the store versions.
	ErrNotTracked = errors.New("not a tracked file")

	// ErrRootCommit: the commit has no parent, so there is no earlier state
	// to restore.
	ErrRootCommit = errors.New("root commit has no earlier state")

	// ErrNoMatchingCommit: no commit on the first-parent history from HEAD
	// has the requested subject prefix (or the repository has no commits).
	ErrNoMatchingCommit = errors.New("no matching commit")

	// ErrNotInHistory: the commit exists but is not on the first-parent
	// history of HEAD, so restoring "the state before it" has no meaning.
	ErrNotInHistory = errors.New("commit is not in the current history")

	// ErrLocked: another process holds the repository's index.lock (a git
	// command or another dreamgate process) and did not release it in time.
	ErrLocked = errors.New("memory repository is locked by another process")

	// ErrConcurrentUpdate: HEAD moved while a commit was being made (another
	// process committed). Nothing was lost; the caller may retry.
	ErrConcurrentUpdate = errors.New("memory repository changed during the operation")

	// ErrDamaged: HEAD or its branch holds no usable value (empty, torn,
	// naming a commit the repository lacks) and nothing the repository
	// knows (the commit index, the reflog, ORIG_HEAD, packed-refs, the
	// commits matching the memory files) says which commit it should name.
	// Nothing was changed: the Store never starts a repository that holds
	// commits afresh. Every method fails with it until someone repairs the
	// ref; the error is a *DamagedError saying how.
	ErrDamaged = errors.New("memory repository is damaged and could not be repaired")

	// ErrLinkNotRestored: undoing the commit would bring back a file as
	// the symbolic link it was before the commit, which a restore never
	// does (memory is read through no link), and nothing else of the
	// commit is left to undo. The error is a *LinkNotRestoredError naming
	// the files; it matches ErrNothingToCommit too (no commit was made).
	ErrLinkNotRestored = errors.New("a symbolic link is never brought back")
)

// DamagedError is returned when HEAD or its branch is damaged beyond what
// the Store repairs on its own. It matches ErrDamaged with errors.Is.
type DamagedError struct {
	Ref     string // "refs/heads/main", or "HEAD"
	Path    string // its file
	Problem string // what is wrong with it: "is empty", …
	Reason  string // why no value could be chosen
}

// Error says what to do too: git itself refuses to move a broken ref
// (`git update-ref` fails with "reference broken"), so the fix is to write
// the file.
func (e *DamagedError) Error() string {
	fix := "write the id of the right commit into " + e.Path + " (`git fsck` lists the dangling commits that could be it)"
	if e.Ref == "HEAD" {
		fix = "write `ref: refs/heads/<branch>` into " + e.Path
	}
	return fmt.Sprintf("%s: %s %s and %s; nothing was changed or re-created: %s, or restore .git from a backup",
		ErrDamaged, e.Ref, e.Problem, e.Reason, fix)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// NestedRepositoryError is returned by Open when the workspace lies inside
// another repository. It matches ErrNestedRepository with errors.Is.
type NestedRepositoryError struct {
	Workspace string // the workspace directory asked for
	Outer     string // the ancestor directory holding a .git entry
}

func (e *NestedRepositoryError) Error() string {
	return fmt.Sprintf("workspace %s is inside the git repository at %s: "+
		"choose a workspace outside it (a memory repository nested in another one is refused)",
		e.Workspace, e.Outer)
}

func (e *NestedRepositoryError) Unwrap() error { return ErrNestedRepository }

// AmbiguousRevisionError is returned when a prefix names several commits. It
// matches ErrAmbiguousRevision with errors.Is.
type AmbiguousRevisionError struct {
	Prefix     string
	Candidates []string // full ids of the matching commits, sorted
}

func (e *AmbiguousRevisionError) Error() string {
	shorts := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		shorts[i] = shortID(c)
	}
	return fmt.Sprintf("%s: %q matches %d commits (%s)",
		ErrAmbiguousRevision, e.Prefix, len(e.Candidates), strings.Join(shorts, ", "))
}

func (e *AmbiguousRevisionError) Unwrap() error { return ErrAmbiguousRevision }

// LinkNotRestoredError is returned when the only change an undo would
// make is to bring symbolic links back. It matches ErrLinkNotRestored and
// ErrNothingToCommit with errors.Is.
type LinkNotRestoredError struct {
	Commit string   // the short id of the commit asked to be undone
	Paths  []string // the files that were links before it, sorted
}

func (e *LinkNotRestoredError) Error() string {
	return fmt.Sprintf("undoing %s would bring back %s as the symbolic link it was before, and %s: %s",
		e.Commit, strings.Join(e.Paths, ", "), ErrLinkNotRestored, ErrNothingToCommit)
}

func (e *LinkNotRestoredError) Unwrap() []error {
	return []error{ErrLinkNotRestored, ErrNothingToCommit}
}
