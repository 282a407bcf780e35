package dream

import (
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/workspace"
)

// statePath is Dream's own bookkeeping, beside the cursors. It is not
// tracked by the memory repository (gitstore ignores everything under
// memory/ but MEMORY.md).
func statePath(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(workspace.DreamState))
}

// state is the content of memory/.dream_state. It survives restarts and is
// shared by every process using the workspace (they are serialised by the
// Dream lock).
type state struct {
	// Failures counts failed runs on the batch that starts after the
	// current Dream cursor; nil when the last run succeeded.
	Failures *batchFailures `json:"failures,omitempty"`
	// Pending holds the findings of a batch that phase 2 applied in part:
	// the applied ones are committed, these are applied by the next run
	// without a new analysis. nil when no batch is half done.
	Pending *pendingFindings `json:"pending,omitempty"`
	// LastRun describes the most recent finished run.
	LastRun *LastRun `json:"last_run,omitempty"`
	// Skips are the most recent skipped batches, newest last (at most
	// maxSkipsKept), for Status and /dream-log.
	Skips []Skip `json:"skips,omitempty"`
}

// pendingFindings are the findings of history entries First-Last that are
// still to be applied. The batch is done, and the cursor moves past Last,
// only when every one of them is applied or dropped by the model.
type pendingFindings struct {
	First    int       `json:"first"`
	Last     int       `json:"last"`
	Total    int       `json:"total"` // findings of the batch, applied ones included
	Findings []finding `json:"findings"`
}

// Skip is a batch Dream gave up on after repeated failures.
type Skip struct {
	When  time.Time `json:"when"`
	First int       `json:"first"`
	Last  int       `json:"last"`
	// Reason is the last failure's, without the operator's detail (it is
	// shown in chats; the log has the whole).
	Reason string `json:"reason,omitempty"`
	// Findings is the number of the batch's findings that were never
	// applied (0 when the analysis itself kept failing).
	Findings int `json:"findings,omitempty"`
}

// maxSkipsKept bounds state.Skips.
const maxSkipsKept = 5

// batchFailures identifies a batch by its first cursor: the cursor does not
// move while it fails, so every retry starts at the same entry even when
// the batch grows with new entries. Last is the end of the shortest
// attempt: the entries every failed attempt read.
type batchFailures struct {
	First  int    `json:"first"`
	Last   int    `json:"last"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// LastRun is the outcome of the most recent finished Dream in this
// workspace, in any process.
type LastRun struct {
	When     time.Time     `json:"when"`
	Trigger  string        `json:"trigger"`
	Outcome  Outcome       `json:"outcome"`
	Entries  int           `json:"entries"`
	First    int           `json:"first,omitempty"`
	Last     int           `json:"last,omitempty"`
	Changes  int           `json:"changes,omitempty"`
	Commit   string        `json:"commit,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration"`
	// Batches is the number of batches the run completed; Backlog the
	// unread history entries it left; Left the findings of a half-applied
	// batch still to apply.
	// PublicReason is Reason without the operator's detail.
	PublicReason string `json:"public_reason,omitempty"`
	Batches      int    `json:"batches,omitempty"`
	Backlog      int    `json:"backlog,omitempty"`
	Left         int    `json:"left,omitempty"`
	// UndoneBy is the short id of the restore that has undone Commit since
	// ("" while it stands).
	UndoneBy string `json:"undone_by,omitempty"`
}

// loadState reads the state file. A missing file is the zero state; a
// corrupt one is reported so the caller can log it and start afresh (the
// worst case is a failure count starting again).
func loadState(dir string) (state, error) {
	var st state
	if _, err := readJSON(statePath(dir), "dream state", &st); err != nil {
		return state{}, err
	}
	return st, nil
}

// saveState writes the state file atomically.
func saveState(dir string, st state) error {
	return writeJSON(statePath(dir), "dream state", st)
}
