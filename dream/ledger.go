package dream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/workspace"
)

// DefaultScope names the memory scope of the workspace root (SOUL.md,
// USER.md, memory/MEMORY.md), the operator's, and of every history entry
// that names no scope. Other scopes are named by the folder under scopes/
// that holds their files.
const DefaultScope = audience.Default

// PointLedger names the moment after the ledger's record reached the disk
// (Deps.Hook).
const PointLedger = "dream-ledger"

// ledgerVersion is the record's format.
const ledgerVersion = 1

// Ledger is the one owner of Dream's progress: per memory scope the cursor
// (how far its history is consumed), the failures of the batch that starts
// after it, the findings a stopped run left to apply, the batches skipped,
// and the last run; and the running Dream's intent (one Dream at a time).
// It alone reads and writes them, in one record, memory/.dream_ledger,
// written atomically; and it is the only caller of the history store's
// SetDreamCursor. memory/.dream_cursor stays what nanobot reads: the
// frontier below which every scope has consumed every entry.
//
// Its writers (a Dream, a restore, the retention while Dream is off) hold
// the Dream lock, memory/.dream.lock, which the ledger takes (begin): one
// writer at a time across goroutines and processes, so a record read at
// begin is still the record on disk when it is written back. Readers
// (Status, /metrics) take no lock: the record is replaced atomically.
//
// A scope missing from the record has read everything up to the frontier
// (Frontier). A run records every scope with unread entries before it
// moves the cursors of the scopes with none up to the end of the history,
// so the least cursor never passes an entry some scope has not read.
//
// Each write moves memory/.dream_cursor first, when the frontier moved, and
// then writes the record. A process killed between the two leaves the file
// ahead of the record; so does another program that moved the file (nanobot's
// own Dream). Either way the file wins when they differ: every scope's
// cursor follows it.
type Ledger struct {
	// deepMu serialises this process's writes of the deep-Dream requests
	// (memory/.dream_deep), which take no Dream lock.
	deepMu sync.Mutex
	dir    string // the workspace
	hist   History
	log    *slog.Logger
	hook   func(point string) // nil: none
	lock   flight
}

// NewLedger returns the ledger of the workspace dir whose history is hist.
// It touches nothing on disk. A Dreamer makes its own (Dreamer.Ledger); cmd
// makes one where no Dreamer runs (Dream off) for the retention and
// /metrics.
func NewLedger(dir string, hist History, logger *slog.Logger) *Ledger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Ledger{dir: dir, hist: hist, log: logger, lock: flight{path: lockPath(dir)}}
}

// record is the content of memory/.dream_ledger.
type record struct {
	Version int `json:"version"`
	// Frontier is the value the ledger last wrote to memory/.dream_cursor:
	// the least cursor of the scopes.
	Frontier int `json:"frontier"`
	// Scopes holds each memory scope's progress, by scope name
	// (DefaultScope is ""). A name audience.ParseScope refuses makes the
	// record unreadable (damaged), never a path.
	Scopes map[audience.Scope]*progress `json:"scopes"`
	// Intent stands while phase 2 may have edits on disk that no commit
	// holds yet; nil otherwise.
	Intent *intent `json:"intent,omitempty"`
}

// progress is one memory scope's Dream progress.
type progress struct {
	// Cursor is the highest history cursor this scope has consumed.
	Cursor int `json:"cursor"`
	// Failures counts failed runs on the batch that starts after Cursor;
	// nil when the last run on it succeeded.
	Failures *batchFailures `json:"failures,omitempty"`
	// Pending holds the findings of a batch that phase 2 applied in part:
	// the applied ones are committed, these are applied by the next run
	// without a new analysis. nil when no batch is half done.
	Pending *pendingFindings `json:"pending,omitempty"`
	// Skips are the most recent skipped batches, newest last (at most
	// maxSkipsKept). The history entry recording each ("[DREAM-SKIPPED]
	// …") is the person's record; this list is Dream's.
	Skips []Skip `json:"skips,omitempty"`
	// LastRun describes the most recent finished run.
	LastRun *LastRun `json:"last_run,omitempty"`
	// SinceDeep counts the scope's Dreams (completed batches) since its
	// last deep Dream; LastDeep is when that was (nil: never).
	SinceDeep int        `json:"since_deep,omitempty"`
	LastDeep  *time.Time `json:"last_deep,omitempty"`
	// DeepLeft is the size in tokens the last deep Dream had to leave the
	// scope's memory at, over its target (what is left is permanent or
	// SOUL.md's); 0 when it reached the target. Until the memory grows
	// past it, its size alone does not call for another.
	DeepLeft int `json:"deep_left,omitempty"`
}

// scope returns the named scope's progress, adding it when missing.
func (r *record) scope(name audience.Scope) *progress {
	if r.Scopes == nil {
		r.Scopes = map[audience.Scope]*progress{}
	}
	p := r.Scopes[name]
	if p == nil {
		p = &progress{Cursor: r.Frontier}
		r.Scopes[name] = p
	}
	return p
}

// frontier is the least cursor of the scopes: every entry at or below it is
// consumed everywhere.
func (r *record) frontier() int {
	f, first := 0, true
	for _, p := range r.Scopes {
		if first || p.Cursor < f {
			f, first = p.Cursor, false
		}
	}
	if first {
		return r.Frontier
	}
	return f
}

// follow makes the record agree with memory/.dream_cursor holding cursor,
// and reports whether it had to. A frontier moved forward means those
// entries are consumed in every scope; moved back, that they are to be read
// again. Failures and findings left for a batch the cursor has passed are
// dropped: that batch is done.
func (r *record) follow(cursor int) bool {
	moved := cursor != r.Frontier
	for _, p := range r.Scopes {
		if moved {
			if cursor > r.Frontier {
				p.Cursor = max(p.Cursor, cursor)
			} else {
				p.Cursor = min(p.Cursor, cursor)
			}
		}
		if p.Failures != nil && p.Failures.First <= p.Cursor {
			p.Failures = nil
		}
		if p.Pending != nil && p.Pending.First <= p.Cursor {
			p.Pending = nil
		}
	}
	r.Frontier = cursor
	return moved
}

// clone deep-copies the record, so a change that fails to reach the disk
// leaves the held one as it was.
func (r *record) clone() (record, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return record{}, fmt.Errorf("copy dream ledger: %w", err)
	}
	var c record
	if err := json.Unmarshal(b, &c); err != nil {
		return record{}, fmt.Errorf("copy dream ledger: %w", err)
	}
	return c, nil
}

func (l *Ledger) path() string {
	return filepath.Join(l.dir, filepath.FromSlash(workspace.DreamLedger))
}

// Legacy files: Dream's progress before the ledger, migrated into it once.
func (l *Ledger) legacyPaths() []string {
	return []string{
		filepath.Join(l.dir, filepath.FromSlash(workspace.LegacyDreamState)),
		filepath.Join(l.dir, filepath.FromSlash(workspace.LegacyDreamIntent)),
	}
}

// loaded is the record as read, and what reading it found.
type loaded struct {
	rec record
	// exists: the record file was there; legacy: old files were found
	// (and read into rec when the record was not there); followed: the
	// cursor file had moved from the record's frontier (from).
	exists, legacy, followed bool
	from                     int
	// damaged says what could not be decoded (the record, or an old file
	// being migrated); the progress it held starts afresh from the cursor
	// file: at worst a failure count starts again, or findings are
	// analysed again.
	damaged error
}

// read reads the record and the cursor file and makes them agree (in
// memory). Without a record, the old files are read into one. An error
// means the files could not be read at all.
func (l *Ledger) read() (loaded, error) {
	var ld loaded
	cursor, err := l.hist.DreamCursor()
	if err != nil {
		return ld, fmt.Errorf("read dream cursor: %w", err)
	}
	ld.exists, err = readJSON(l.path(), "dream ledger", &ld.rec)
	switch {
	case err != nil && !ld.exists:
		return ld, err
	case err != nil:
		ld.rec, ld.damaged = record{Frontier: cursor}, err
	}
	for _, p := range l.legacyPaths() {
		if _, serr := os.Stat(p); serr == nil {
			ld.legacy = true
		}
	}
	if !ld.exists && ld.legacy {
		ld.rec = record{Frontier: cursor}
		ld.damaged = l.readLegacy(&ld.rec)
	}
	if !ld.exists && !ld.legacy {
		ld.rec = record{Frontier: cursor}
	}
	ld.rec.Version = ledgerVersion
	ld.rec.scope(DefaultScope)
	ld.from = ld.rec.Frontier
	ld.followed = ld.rec.follow(cursor)
	return ld, nil
}

// readLegacy fills a new record from memory/.dream_state and
// memory/.dream_intent, as the Dreams before the ledger left them.
func (l *Ledger) readLegacy(rec *record) error {
	paths := l.legacyPaths()
	var st struct {
		Failures *batchFailures   `json:"failures,omitempty"`
		Pending  *pendingFindings `json:"pending,omitempty"`
		LastRun  *LastRun         `json:"last_run,omitempty"`
		Skips    []Skip           `json:"skips,omitempty"`
	}
	_, serr := readJSON(paths[0], "old dream state", &st)
	p := rec.scope(DefaultScope)
	p.Failures, p.Pending, p.LastRun, p.Skips = st.Failures, st.Pending, st.LastRun, st.Skips
	var in intent
	ok, ierr := readJSON(paths[1], "old dream intent", &in)
	if ok {
		rec.Intent = &in
	}
	return errors.Join(serr, ierr)
}

// write puts rec on disk: the cursor file first when the frontier moved,
// then the record, each atomically.
func (l *Ledger) write(rec *record) error {
	if f := rec.frontier(); f != rec.Frontier {
		if err := l.hist.SetDreamCursor(f); err != nil {
			return fmt.Errorf("set dream cursor to %d: %w", f, err)
		}
		rec.Frontier = f
	}
	if err := writeJSON(l.path(), "dream ledger", rec); err != nil {
		return err
	}
	if l.hook != nil {
		l.hook(PointLedger)
	}
	return nil
}

// held is the ledger while its caller holds the Dream lock: the record as
// read when the lock was taken, kept in step with the disk by change.
type held struct {
	l       *Ledger
	rec     record
	release func()
}

// begin takes the Dream lock — never waiting: a *BusyError when a Dream, a
// restore or a retention pass holds it here or in another process — then
// reads the record, migrating the old files once and following the cursor
// file. The caller must call end.
func (l *Ledger) begin(now time.Time) (*held, error) {
	release, err := l.lock.acquire(now)
	if err != nil {
		return nil, err
	}
	h := &held{l: l, release: release}
	ld, err := l.read()
	if err != nil {
		release()
		return nil, err
	}
	if ld.damaged != nil {
		l.log.Error("Dream's progress could not be read whole; going on from memory/.dream_cursor", "err", ld.damaged)
	}
	h.rec = ld.rec
	if ld.followed && (ld.exists || ld.legacy) {
		l.log.Warn("memory/.dream_cursor differs from the Dream ledger (a run killed between the two writes, or another program moved it); following the file",
			"ledger", ld.from, "file", ld.rec.Frontier)
	}
	if !ld.legacy {
		return h, nil
	}
	if !ld.exists {
		if err := l.write(&h.rec); err != nil {
			h.end()
			return nil, fmt.Errorf("migrate dream progress into the ledger: %w", err)
		}
	}
	for i, p := range l.legacyPaths() {
		name := []string{workspace.LegacyDreamState, workspace.LegacyDreamIntent}[i]
		switch err := os.Remove(p); {
		case err == nil:
			// Once: the file is gone. (A record already there means a
			// start killed after writing it; it holds the same.)
			l.log.Info("Dream's progress moved into its ledger", "from", name, "to", workspace.DreamLedger, "read", !ld.exists)
		case !errors.Is(err, fs.ErrNotExist):
			l.log.Warn("an old Dream file could not be removed after its move into the ledger", "path", name, "err", err)
		}
	}
	return h, nil
}

// end releases the Dream lock.
func (h *held) end() { h.release() }

// scope is a scope's progress as held, for reading; changes go through
// change.
func (h *held) scope(name audience.Scope) progress { return *h.rec.scope(name) }

// intent is the intent as held (nil when none).
func (h *held) intent() *intent { return h.rec.Intent }

// change applies f to a copy of the record and writes the copy; only once it
// is on disk does it become the record held. An error leaves both as they
// were (except a cursor file already moved: the next begin follows it).
func (h *held) change(f func(r *record)) error {
	c, err := h.rec.clone()
	if err != nil {
		return err
	}
	f(&c)
	if err := h.l.write(&c); err != nil {
		return err
	}
	h.rec = c
	return nil
}

// changeScope is change for one scope's progress.
func (h *held) changeScope(name audience.Scope, f func(p *progress)) error {
	return h.change(func(r *record) { f(r.scope(name)) })
}

// Cursor is the highest history cursor the scope has consumed.
func (l *Ledger) Cursor(scope audience.Scope) (int, error) {
	ld, err := l.read()
	if err != nil {
		return 0, err
	}
	return ld.rec.scope(scope).Cursor, nil
}

// Backlog is the number of history entries some scope has not read: the
// entries of every scope after that scope's cursor (what /metrics shows).
func (l *Ledger) Backlog() (int, error) {
	ld, err := l.read()
	if err != nil {
		return 0, err
	}
	bl, _, err := l.backlogs(&ld.rec)
	n := 0
	for _, b := range bl {
		n += b.Count
	}
	return n, err
}

// backlogs lists the scopes with entries they have not read, the oldest
// first, without reading the entries: the history store knows each unread
// entry's scope. A scope the record does not know yet has read up to the
// frontier. last is the highest cursor the history held: a scope not
// listed has read everything of its own up to it.
func (l *Ledger) backlogs(rec *record) (bl []history.Backlog, last int, err error) {
	cursors := make(map[audience.Scope]int, len(rec.Scopes))
	for name, p := range rec.Scopes {
		cursors[name] = p.Cursor
	}
	bl, last, err = l.hist.Backlogs(rec.Frontier, cursors)
	if err != nil {
		return nil, 0, fmt.Errorf("dream backlog: %w", err)
	}
	return bl, last, nil
}

// progressOf reads a scope's progress without the lock (Status).
func (l *Ledger) progressOf(scope audience.Scope) (progress, error) {
	ld, err := l.read()
	return *ld.rec.scope(scope), err
}

// readJSON decodes the JSON file at path into v; ok is false when there is
// no file, or it could not be read (err says so), and true with an error
// when what it holds cannot be decoded. what names the file in errors
// ("dream ledger").
func readJSON(path, what string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("decode %s: %w", what, err)
	}
	return true, nil
}

// writeJSON writes v as indented JSON through the workspace's atomic write
// (temp file, fsync, rename), so a kill leaves the old file or the new one.
func writeJSON(path, what string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if err := workspace.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
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

// maxSkipsKept bounds progress.Skips.
const maxSkipsKept = 5
