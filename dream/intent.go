package dream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
)

// intentPath is memory/.dream_intent: what a Dream is doing while phase 2
// may have edits on disk that no commit holds yet. A run that is killed
// leaves it behind, and the next one (under the Dream lock) finds it, so
// the half-made edits are recorded as Dream's and never mistaken for a
// person's hand edits.
func intentPath(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(workspace.DreamIntent))
}

// intent is the content of memory/.dream_intent.
type intent struct {
	// First and Last are the history entries whose findings are applied.
	First int `json:"first"`
	Last  int `json:"last"`
	// Started is when phase 2 began; PID the process that wrote it.
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	// Files are the memory files as they were before phase 2.
	Files []intentFile `json:"files"`
	// Findings are the batch's findings still to apply when phase 2 began;
	// Applied how many of them (in order) completed chunks have applied.
	Findings []finding `json:"findings"`
	Applied  int       `json:"applied"`
	// Total is the number of the batch's findings, earlier runs' included.
	Total int `json:"total"`
}

// intentFile is one memory file before phase 2: its content's SHA-256, or
// Missing.
type intentFile struct {
	Path    string `json:"path"`
	Missing bool   `json:"missing,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

func newIntent(first, last int, snaps []fileSnap, findings []finding, total int, now time.Time) intent {
	in := intent{First: first, Last: last, Started: now, PID: os.Getpid(), Findings: findings, Total: total}
	for _, s := range snaps {
		f := intentFile{Path: s.rel, Missing: !s.exists && !s.link}
		if s.exists {
			f.SHA256 = hashOf(s.data)
		}
		in.Files = append(in.Files, f)
	}
	return in
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// saveIntent writes the intent atomically (workspace.WriteFile: temp file,
// fsync, rename), so a kill leaves the old record or the new one.
func saveIntent(dir string, in intent) error {
	return writeJSON(intentPath(dir), "dream intent", in)
}

// loadIntent reads the intent; ok is false when there is none.
func loadIntent(dir string) (in intent, ok bool, err error) {
	ok, err = readJSON(intentPath(dir), "dream intent", &in)
	if err != nil {
		return intent{}, false, err
	}
	return in, ok, nil
}

func removeIntent(dir string) error {
	if err := os.Remove(intentPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove dream intent: %w", err)
	}
	return nil
}

// unchanged reports whether the memory files are as the intent found them
// before phase 2.
func (in intent) unchanged(dir string) (bool, error) {
	for _, f := range in.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !f.Missing {
				return false, nil
			}
		case err != nil:
			return false, fmt.Errorf("read %s: %w", f.Path, err)
		case f.Missing || hashOf(b) != f.SHA256:
			return false, nil
		}
	}
	return true, nil
}

// RecoveredSuffix ends the subject of the commit that records an
// interrupted Dream's edits.
const RecoveredSuffix = "(recovered after an interrupted run)"

// recoverIntent finishes what an interrupted Dream left: the caller holds
// the Dream lock, so an intent found now belongs to a run that died. The
// memory files as found are committed as a Dream commit labelled recovered
// (the rule: phase 2 was the only writer allowed while the intent stood, so
// what differs from HEAD is taken for its work; /dream-restore can undo
// it), the findings its completed chunks had not applied become the
// pending ones, and the intent is removed. It returns the recovered
// commit's short id ("" when there was nothing to record). An error leaves
// the intent in place: the edits must not then be committed as hand edits.
func (d *Dreamer) recoverIntent(st *state) (string, error) {
	dir := d.cfg.Workspace
	in, ok, err := loadIntent(dir)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", nil
	}
	diff, err := d.repo.Status()
	if err != nil {
		return "", fmt.Errorf("status for an interrupted dream: %w", err)
	}
	short := ""
	same, err := in.unchanged(dir)
	if err != nil {
		return "", err
	}
	switch {
	case diff.Empty():
		// Nothing uncommitted: the run died before editing, or after its
		// commit.
	case same:
		// The files differ from HEAD but not from what the run found: not
		// its edits (the hand-edit commit of the next run takes them).
	default:
		_, n := countChanges(diff)
		subject := fmt.Sprintf("%s %s from history %d-%d %s", SubjectPrefix,
			plural(n, "change", "changes"), in.First, in.Last, RecoveredSuffix)
		c, err := d.repo.Commit(subject, d.repo.Summary(diff, summaryCap))
		if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
			return "", fmt.Errorf("commit an interrupted dream's edits: %w", err)
		}
		short = c.Short
	}
	d.resumeAfterRecovery(st, in)
	if err := removeIntent(dir); err != nil {
		d.log.Warn("dream intent not removed; the next run will look at it again", "err", err)
	}
	d.log.Warn("dream recovered an interrupted run", "first", in.First, "last", in.Last,
		"pid", in.PID, "started", in.Started, "commit", short, "applied", in.Applied, "findings", len(in.Findings))
	return short, nil
}

// resumeAfterRecovery sets what the next batch does after an interrupted
// run: when every finding of the batch was applied, the batch is done; else
// the findings not yet applied are pending (those of the chunk that was
// cut are applied again: the model leaves a fact that is already there).
func (d *Dreamer) resumeAfterRecovery(st *state, in intent) {
	cursor, err := d.hist.DreamCursor()
	if err != nil || cursor >= in.Last || len(in.Findings) == 0 {
		return
	}
	left := in.Findings[min(in.Applied, len(in.Findings)):]
	if len(left) == 0 {
		if err := d.hist.SetDreamCursor(in.Last); err != nil {
			d.log.Warn("dream cursor not advanced after recovering a finished batch; it will be read again", "err", err)
			return
		}
		st.Pending, st.Failures = nil, nil
		return
	}
	st.Pending = &pendingFindings{First: in.First, Last: in.Last, Total: max(in.Total, len(in.Findings)), Findings: left}
}

// recoverBeforeRestore runs recoverIntent for Restore, which otherwise
// leaves the Dream state alone.
func (d *Dreamer) recoverBeforeRestore() error {
	if _, ok, err := loadIntent(d.cfg.Workspace); err != nil || !ok {
		return err
	}
	st, err := loadState(d.cfg.Workspace)
	if err != nil {
		d.log.Warn("dream state unreadable; starting afresh", "err", err)
	}
	if _, err := d.recoverIntent(&st); err != nil {
		return err
	}
	if err := saveState(d.cfg.Workspace, st); err != nil {
		d.log.Error("dream state not saved", "err", err)
	}
	return nil
}
