package dream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/workspace"
)

// What earlier versions left, taken in once: memory/.dream_state and
// memory/.dream_intent (before the ledger), memory/.dream_deep (the deep
// Dream's requests, kept apart from the ledger before whole steps), and
// the records those versions kept while their edits were on disk with no
// commit holding them (the intent of a phase 2 that edited the files
// themselves, a deep Dream's writing), which the recovery commits as
// Dream's.

// legacyFile is a file of an earlier version, read into the ledger once.
type legacyFile struct {
	rel  string
	path string
}

func (l *Ledger) legacyFiles() []legacyFile {
	var out []legacyFile
	for _, rel := range []string{workspace.LegacyDreamState, workspace.LegacyDreamIntent, workspace.LegacyDreamDeep} {
		out = append(out, legacyFile{rel: rel, path: filepath.Join(l.dir, filepath.FromSlash(rel))})
	}
	return out
}

// readLegacy adds to rec what the files of earlier versions hold: without
// a record (exists false), the progress of .dream_state and the intent of
// .dream_intent; always, the deep Dream's requests and writing of
// .dream_deep. It reports whether any such file was there, and joins what
// could not be decoded to damaged.
func (l *Ledger) readLegacy(rec *record, exists bool, damaged error) (bool, error) {
	files := l.legacyFiles()
	found := false
	for _, f := range files {
		if _, err := os.Stat(f.path); err == nil {
			found = true
		}
	}
	if !found {
		return false, damaged
	}
	if !exists {
		var st struct {
			Failures *batchFailures   `json:"failures,omitempty"`
			Pending  *pendingFindings `json:"pending,omitempty"`
			LastRun  *LastRun         `json:"last_run,omitempty"`
			Skips    []Skip           `json:"skips,omitempty"`
		}
		_, serr := readJSON(files[0].path, "old dream state", &st)
		p := rec.scope(DefaultScope)
		p.Failures, p.Pending, p.LastRun, p.Skips = st.Failures, st.Pending, st.LastRun, st.Skips
		var in intent
		ok, ierr := readJSON(files[1].path, "old dream intent", &in)
		if ok {
			rec.Intent = &in
		}
		damaged = errors.Join(damaged, serr, ierr)
	}
	// Names are read as text and checked one by one: a name that is no
	// scope is dropped, not the file (the prompt asks again).
	var deep struct {
		Scopes  []string `json:"scopes"`
		Writing *struct {
			Scope   string    `json:"scope"`
			Why     string    `json:"why"`
			Started time.Time `json:"started"`
		} `json:"writing,omitempty"`
	}
	if _, err := readJSON(files[2].path, "old deep Dream requests", &deep); err != nil {
		l.log.Warn("old deep Dream requests unreadable; starting afresh", "err", err)
	}
	for _, name := range deep.Scopes {
		if s, err := audience.ParseScope(name); err == nil {
			rec.scope(s).DeepAsked = true
		}
	}
	if w := deep.Writing; w != nil && rec.DeepWriting == nil {
		if s, err := audience.ParseScope(w.Scope); err == nil {
			rec.DeepWriting = &deepWriting{Scope: s, Why: w.Why, Started: w.Started}
		}
	}
	return true, damaged
}

// migrate writes the record with what the files of earlier versions held
// (begin read them into it) and removes those files: once, the first time
// the Dream lock is taken.
func (l *Ledger) migrate(h *held, existed bool) error {
	if err := h.update(func(*record) {}); err != nil {
		return fmt.Errorf("migrate dream progress into the ledger: %w", err)
	}
	for _, f := range l.legacyFiles() {
		switch err := os.Remove(f.path); {
		case err == nil:
			// Once: the file is gone. (A record already there means a
			// start killed after writing it; it holds the same.)
			l.log.Info("Dream's progress moved into its ledger", "from", f.rel, "to", workspace.DreamLedger, "read", !existed || f.rel == workspace.LegacyDreamDeep)
		case !errors.Is(err, fs.ErrNotExist):
			l.log.Warn("an old Dream file could not be removed after its move into the ledger", "path", f.rel, "err", err)
		}
	}
	return nil
}

// intent is what a Dream of an earlier version recorded while its phase 2
// edited the memory files themselves; a run killed then left it in the
// ledger (record.Intent). It is read, never written.
type intent struct {
	// Scope is the memory scope whose files phase 2 edited; the Files are
	// relative to its folder.
	Scope audience.Scope `json:"scope,omitempty"`
	// First and Last are the history entries whose findings were applied.
	First int `json:"first"`
	Last  int `json:"last"`
	// Started is when phase 2 began; PID the process that wrote it.
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	// Files are the memory files as they were before phase 2.
	Files []intentFile `json:"files"`
	// Findings are the batch's findings still to apply when phase 2 began;
	// Applied how many of them (in order) completed chunks had applied.
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

// resume drops the intent and sets what the next batch does after an
// interrupted run of an earlier version: when every finding of the batch
// was applied, the batch is done; else the findings not yet applied are
// pending (those of the chunk that was cut are applied again: that
// version's phase 2 edited the files one edit at a time).
func (h *held) resume(in intent) error {
	return h.update(func(r *record) {
		r.Intent = nil
		p := r.scope(in.Scope)
		if p.Cursor >= in.Last || len(in.Findings) == 0 {
			return
		}
		left := in.Findings[min(in.Applied, len(in.Findings)):]
		if len(left) == 0 {
			r.batchDone(in.Scope, in.Last)
			return
		}
		p.Pending = &pendingFindings{First: in.First, Last: in.Last, Total: max(in.Total, len(in.Findings)), Findings: slices.Clone(left)}
	})
}

// deepWriting is what a deep Dream of an earlier version recorded while
// its writes were on disk with no commit holding them.
type deepWriting struct {
	Scope   audience.Scope `json:"scope"`
	Why     string         `json:"why"`
	Started time.Time      `json:"started"`
}
