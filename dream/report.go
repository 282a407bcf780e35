package dream

import (
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// SubjectPrefix starts the subject of every Dream commit; only such commits
// are listed by /dream-restore and may be restored.
const SubjectPrefix = "dream:"

// Triggers name who started a run (for logs and Status).
const (
	TriggerCron   = "cron"
	TriggerManual = "manual" // /dream in a chat
	TriggerCLI    = "cli"    // dreamgate dream run
)

// Outcome says how a run ended.
type Outcome string

const (
	// OutcomeNothingNew: no history entry after the Dream cursor; no model
	// call was made.
	OutcomeNothingNew Outcome = "nothing-new"
	// OutcomeCompleted: the batch was read, the edits (if any) committed and
	// the cursor advanced.
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed: the run failed; the cursor stayed and the batch will be
	// read again.
	OutcomeFailed Outcome = "failed"
	// OutcomePartial: phase 2 stopped after applying part of the
	// findings: those are committed, the rest recorded for the next run,
	// and the cursor stayed.
	OutcomePartial Outcome = "partial"
	// OutcomeSkipped: the run failed for the MaxFailures-th time on this
	// batch, so the batch was skipped and the skip recorded in the history.
	OutcomeSkipped Outcome = "skipped"
)

// FileChange is one memory file changed by a run, counted from the real
// diff. Changes is max(Added, Deleted): a replaced line counts once, an
// added or removed line once; a binary change counts 1.
type FileChange struct {
	Path           string
	Added, Deleted int
	Changes        int
}

// Report is what a run did, from the files and the history, never from the
// model's account. A run may read several batches (a backlog); the counts
// are their sums, and Outcome, Reason and Failures are those of the last
// batch it attempted.
type Report struct {
	Trigger string
	Outcome Outcome
	// Entries is the number of history entries read; First and Last their
	// cursor range (0 when nothing was read).
	Entries     int
	First, Last int
	// Findings is the number of phase-1 findings phase 2 was given
	// (including findings left by an earlier run and applied by this one).
	Findings int
	// Files lists the memory files changed; Changes is their sum.
	Files   []FileChange
	Changes int
	// Commit is the short id of the last Dream commit ("" when none), and
	// Commits those of every batch, oldest first; ManualCommit that of the
	// commit saving hand edits made before the run; Recovered that of the
	// step an interrupted Dream had committed and the run finished first
	// (its files written, the ledger told), or of the commit recording the
	// edits an earlier version's interrupted Dream left on disk.
	Commit       string
	Commits      []string
	ManualCommit string
	Recovered    string
	// Batches is the number of batches completed. A run goes on with the
	// next batch while unread entries remain, up to
	// Config.MaxBatchesPerRun batches and Config.MaxTokensPerRun tokens;
	// Backlog is the number of unread entries it left.
	Batches int
	Backlog int
	// EntriesDone counts the entries of the completed batches: Entries
	// without those of a last batch that failed or stopped part-way.
	EntriesDone int
	// Left is the number of a batch's findings that a stopped phase 2 had
	// not applied (OutcomePartial): what it applied is committed, and the
	// next run applies the rest without a new analysis.
	Left int
	// Calls and Usage count the model calls of both phases; Usage.Calls
	// equals Calls.
	Calls          int
	Usage          llm.Usage
	Phase1, Phase2 llm.Usage
	Started        time.Time
	Duration       time.Duration
	// Reason is one sentence, safe to show in a chat, saying why the run
	// failed; "" unless the Outcome is failed, partial or skipped. It is
	// written for the operator: a failed model call names the cause and
	// what to check. PublicReason is the same for anyone else (Slack,
	// Discord), without the operator's detail.
	Reason       string
	PublicReason string
	// Failures is the number of failed runs on this batch so far, this one
	// included (0 when the failure was not the batch's fault: the model was
	// unreachable, the run was cancelled, the repository failed).
	Failures int
	// MaxFailures is the configured limit, for the text.
	MaxFailures int
	// BatchFirst and BatchLast are the range of the last batch attempted:
	// the entries given up on when it was skipped.
	BatchFirst, BatchLast int
	// Dropped is the number of consumed history entries compaction removed.
	Dropped int
	// ColdLines is the number of memory lines moved to cold memory:
	// expired ephemeral lines, and what deep Dreams took out.
	ColdLines int
	// Deep lists the deep Dreams the run made (or tried), one per scope.
	Deep []DeepReport
	// Scopes is what the run did in each memory scope it visited, in the
	// order of their first batch; the fields above sum them up (Backlog is
	// that of the scopes the run was about). A workspace of one scope has
	// one, the default scope's, equal to the sums. Each names its scope:
	// only a reader who may read it should see it.
	Scopes []ScopeReport
}

// ScopeReport is a Run's work in one memory scope: the same counts, for
// that scope's batches alone (its Scopes empty), and its unread entries
// left in Backlog.
type ScopeReport struct {
	Scope audience.Scope
	Report
}

// scope returns the ScopeReport of s, adding it when missing.
func (r *Report) scope(s audience.Scope) *Report {
	for i := range r.Scopes {
		if r.Scopes[i].Scope == s {
			return &r.Scopes[i].Report
		}
	}
	r.Scopes = append(r.Scopes, ScopeReport{Scope: s, Report: Report{Trigger: r.Trigger, Started: r.Started, MaxFailures: r.MaxFailures}})
	return &r.Scopes[len(r.Scopes)-1].Report
}

// add folds a batch's report into the run's.
func (r *Report) add(b Report) {
	if b.Outcome != OutcomeNothingNew || r.Batches == 0 {
		r.Outcome = b.Outcome
	}
	r.Entries += b.Entries
	if r.First == 0 {
		r.First = b.First
	}
	if b.Last > 0 {
		r.Last = b.Last
	}
	r.Findings += b.Findings
	for _, f := range b.Files {
		merged := false
		for i := range r.Files {
			if r.Files[i].Path == f.Path {
				r.Files[i].Added += f.Added
				r.Files[i].Deleted += f.Deleted
				r.Files[i].Changes += f.Changes
				merged = true
			}
		}
		if !merged {
			r.Files = append(r.Files, f)
		}
	}
	r.Changes += b.Changes
	if b.Commit != "" {
		r.Commit = b.Commit
		r.Commits = append(r.Commits, b.Commit)
	}
	if r.ManualCommit == "" {
		r.ManualCommit = b.ManualCommit
	}
	if b.Outcome == OutcomeCompleted {
		r.Batches++
		r.EntriesDone += b.Entries
	}
	r.Left = b.Left
	r.ColdLines += b.ColdLines
	r.Calls += b.Calls
	r.Usage = r.Usage.Add(b.Usage)
	r.Phase1 = r.Phase1.Add(b.Phase1)
	r.Phase2 = r.Phase2.Add(b.Phase2)
	r.Reason, r.PublicReason, r.Failures = b.Reason, b.PublicReason, b.Failures
	if b.Entries > 0 {
		r.BatchFirst, r.BatchLast = b.First, b.Last
	}
}

// Status is what /status and `dreamgate status` show about Dream.
type Status struct {
	// Running is true while a Dream runs in this process, since Since.
	// (A Dream in another process is not probed: probing the lock could
	// refuse that process's own start.)
	Running bool
	Since   time.Time
	// Last is the most recent finished run in this workspace, in any
	// process; nil before the first.
	Last *LastRun
	// Next is the next scheduled run; zero without a started Scheduler.
	Next time.Time
	// Skips are the most recent batches skipped after repeated failures,
	// oldest first.
	Skips []Skip
	// Backlog is the number of history entries Dream has not read yet.
	Backlog int
	// Cursor is the highest history cursor Dream has consumed.
	Cursor int
	// Scopes is each memory scope's part, by name; the fields above are
	// theirs summed up (Last: the most recent run among them, its counts
	// summed over them; Skips: theirs, oldest first; Cursor: the least).
	// Only the scopes asked for are in it; each names its scope.
	Scopes []ScopeStatus
	// LastDeep is the most recent deep Dream among the scopes (nil:
	// none); DeepAsked names the scopes a prompt found over budget,
	// waiting for theirs.
	LastDeep  *time.Time
	DeepAsked []audience.Scope
}

// ScopeStatus is Dream's progress in one memory scope.
type ScopeStatus struct {
	Scope audience.Scope
	// Last is the most recent run that was about this scope (nil before
	// the first); Skips its skipped batches, oldest first; Backlog its
	// unread entries; Cursor the highest cursor it has consumed.
	Last    *LastRun
	Skips   []Skip
	Backlog int
	Cursor  int
	// LastDeep is when the scope's last deep Dream ran (nil: never);
	// DeepAsked is set while a prompt's request for one waits.
	LastDeep  *time.Time
	DeepAsked bool
}

// Public is the Status for a chat user who is not the operator: the last
// failure's reason without the operator's detail.
func (s Status) Public() Status {
	s.Last = s.Last.public()
	scopes := make([]ScopeStatus, len(s.Scopes))
	for i, sc := range s.Scopes {
		sc.Last = sc.Last.public()
		scopes[i] = sc
	}
	if s.Scopes != nil {
		s.Scopes = scopes
	}
	return s
}

func (l *LastRun) public() *LastRun {
	if l == nil || l.PublicReason == "" {
		return l
	}
	c := *l
	c.Reason = c.PublicReason
	return &c
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
