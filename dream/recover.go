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

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

// intent is what a Dream is doing while phase 2 may have edits on disk
// that no commit holds yet, kept in the ledger (record.Intent). A run that
// is killed leaves it behind, and the next one (under the Dream lock) finds
// it, so the half-made edits are recorded as Dream's and never mistaken for
// a person's hand edits.
type intent struct {
	// Scope is the memory scope whose files phase 2 edits; the Files are
	// relative to its folder.
	Scope audience.Scope `json:"scope,omitempty"`
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

func newIntent(scope audience.Scope, first, last int, snaps []fileSnap, findings []finding, total int, now time.Time) intent {
	in := intent{Scope: scope, First: first, Last: last, Started: now, PID: os.Getpid(), Findings: findings, Total: total}
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

// open is the one way into Dream's progress, for a run, a restore and a
// process start: the ledger takes the Dream lock (never waiting: a
// *BusyError when one is held), migrates the old files once and follows
// the cursor file; then recoverIntent finishes what an interrupted Dream
// left. recovered is the short id of the commit that recorded its edits
// ("" when none). On a recovery error h is still held (the caller reports
// and ends it).
func (d *Dreamer) open() (h *held, recovered string, err error) {
	h, err = d.ledger.begin(d.now())
	if err != nil {
		return nil, "", err
	}
	recovered, err = d.recoverIntent(h)
	return h, recovered, err
}

// Recover finishes what an interrupted Dream left, and moves Dream's old
// files into its ledger, at a process start (the gateway's): without it,
// the next Dream, perhaps hours later, would, and a killed Dream's edits
// would sit uncommitted meanwhile. When a Dream runs elsewhere, that one
// does it, and Recover returns nil.
func (d *Dreamer) Recover() error {
	h, _, err := d.open()
	var busy *BusyError
	switch {
	case errors.As(err, &busy):
		return nil
	case h == nil:
		return err
	}
	h.end()
	return err
}

// recoverIntent finishes what an interrupted Dream left: the caller holds
// the Dream lock, so an intent found now belongs to a run that died. The
// memory files as found are committed as a Dream commit labelled recovered
// (the rule: phase 2 was the only writer allowed while the intent stood, so
// what differs from HEAD is taken for its work; /dream-restore can undo
// it), and in the same ledger write the intent goes and the findings its
// completed chunks had not applied become the pending ones (or, when every
// one was applied, the batch is done). It returns the recovered commit's
// short id ("" when there was nothing to record). An error leaves the
// intent in place: the edits must not then be committed as hand edits.
func (d *Dreamer) recoverIntent(h *held) (string, error) {
	in := h.intent()
	if in == nil {
		return "", nil
	}
	dir := scopeDir(d.cfg.Workspace, in.Scope)
	diff, err := d.status(in.Scope)
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
		c, err := d.repo.CommitPaths(diffPaths(diff), subject, withTrailer(d.repo.Summary(diff, summaryCap), in.Scope))
		if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
			return "", fmt.Errorf("commit an interrupted dream's edits: %w", err)
		}
		short = c.Short
	}
	if err := h.change(func(r *record) { resume(r, *in) }); err != nil {
		// The commit stands; the next run finds the files as HEAD has them
		// and only resumes.
		d.log.Warn("dream intent not cleared; the next run will look at it again", "err", err)
	}
	d.log.Warn("dream recovered an interrupted run", "first", in.First, "last", in.Last,
		"pid", in.PID, "started", in.Started, "commit", short, "applied", in.Applied, "findings", len(in.Findings))
	return short, nil
}

// resume drops the intent and sets what the next batch does after an
// interrupted run: when every finding of the batch was applied, the batch
// is done (the cursor moves past it); else the findings not yet applied are
// pending (those of the chunk that was cut are applied again: the model
// leaves a fact that is already there).
func resume(r *record, in intent) {
	r.Intent = nil
	p := r.scope(in.Scope)
	if p.Cursor >= in.Last || len(in.Findings) == 0 {
		return
	}
	left := in.Findings[min(in.Applied, len(in.Findings)):]
	if len(left) == 0 {
		p.Cursor, p.Pending, p.Failures = in.Last, nil, nil
		return
	}
	p.Pending = &pendingFindings{First: in.First, Last: in.Last, Total: max(in.Total, len(in.Findings)), Findings: left}
}
