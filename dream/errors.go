package dream

import (
	"errors"
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
)

// Sentinel errors. Errors returned by this package wrap them, so callers
// decide with errors.Is (gateway/dreamtext picks the words).
var (
	// ErrAlreadyRunning: a Dream (or a restore) is running in this process
	// or another one. The error is a *BusyError saying since when.
	ErrAlreadyRunning = errors.New("already dreaming")

	// ErrRunFailed: the run was attempted and failed (model error, cut-off
	// or unusable analysis, editing step stopped early, deadline, repository
	// error). The batch stays unread and is retried next time. The error is
	// a *RunError; the Report carries the sentence for a chat.
	ErrRunFailed = errors.New("dream run failed")

	// ErrBatchSkipped: the run failed and the batch had failed
	// Config.MaxFailures times, so it was skipped (recorded in the history).
	// The error is a *RunError that also matches ErrRunFailed.
	ErrBatchSkipped = errors.New("dream batch skipped after repeated failures")

	// ErrNotDreamCommit: Restore was asked for a commit whose change
	// cannot be undone: only a Dream's, a restore's and one of hand edits
	// can (UndoablePrefixes), not the repository's or a scope's first.
	ErrNotDreamCommit = errors.New("not a Dream commit")

	// ErrNotInScopes: Restore was asked for a commit that changed no file
	// of the scopes it may touch. The error also matches
	// gitstore.ErrUnknownRevision: to the asker, the commit does not
	// exist.
	ErrNotInScopes = errors.New("the commit changed no file of these memory scopes")
)

// errNotInScopes matches ErrNotInScopes and gitstore.ErrUnknownRevision.
var errNotInScopes = notInScopes{}

type notInScopes struct{}

func (notInScopes) Error() string   { return ErrNotInScopes.Error() }
func (notInScopes) Unwrap() []error { return []error{ErrNotInScopes, gitstore.ErrUnknownRevision} }

// BusyError is returned when a Dream is already running. It matches
// ErrAlreadyRunning with errors.Is.
type BusyError struct {
	// Since is when the running Dream started; zero when the other process
	// had not recorded it yet.
	Since time.Time
	// Elsewhere is true when the holder is another process.
	Elsewhere bool
}

func (e *BusyError) Error() string {
	where := "in this process"
	if e.Elsewhere {
		where = "in another process"
	}
	if e.Since.IsZero() {
		return fmt.Sprintf("%s (%s)", ErrAlreadyRunning, where)
	}
	return fmt.Sprintf("%s (%s, started %s)", ErrAlreadyRunning, where, e.Since.Format(time.RFC3339))
}

func (e *BusyError) Unwrap() error { return ErrAlreadyRunning }

// RunError is a failed run: Reason is one sentence safe for a chat, Err the
// whole chain for logs. It matches ErrRunFailed (and ErrBatchSkipped when
// the batch was skipped) and whatever Err wraps.
type RunError struct {
	Reason  string
	Skipped bool
	Err     error
}

func (e *RunError) Error() string {
	kind := ErrRunFailed
	if e.Skipped {
		kind = ErrBatchSkipped
	}
	if e.Err == nil {
		return kind.Error()
	}
	return kind.Error() + ": " + e.Err.Error()
}

func (e *RunError) Unwrap() []error {
	errs := []error{ErrRunFailed}
	if e.Skipped {
		errs = append(errs, ErrBatchSkipped)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
