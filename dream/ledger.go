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
	"github.com/dreamgate/dreamgate/store"
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

// ledgerVersion is the record's format: 2 since whole steps (the head
// commit, deep requests in the record).
const ledgerVersion = 2

// Ledger is Dream's progress: one record (memory/.dream_ledger) that this
// type alone writes, per memory scope (by name; DefaultScope is "") the
// cursor, the failures of the next batch, the findings a stopped batch
// left, the skips, the last run, the deep Dream's count and whether a
// prompt asked for one; and the commit of the memory repository whose step
// it took in last (Head).
//
// Two locks, each with one job. The Dream lock (memory/.dream.lock, taken
// by begin, never waiting) is long: one Dream, restore or retention pass
// at a time across goroutines and processes; only its holder changes the
// cursors and the memory repository. The record lock
// (memory/.dream_ledger.lock) is short: held for one read, change and
// write of the record, by every writer — the Dream lock's holder and a
// prompt asking for a deep Dream (RequestDeep), which so never waits for a
// running Dream, only for a write of a few milliseconds. Readers (Status,
// /metrics) take neither: the record is replaced atomically.
//
// A scope missing from the record has read everything up to the frontier
// (Frontier). Before a write moves the frontier up, every scope with
// entries past the old frontier is recorded at it, so the least cursor
// never passes an entry some scope has not read, whatever order the scopes
// appear in.
//
// Each write moves memory/.dream_cursor first, when the frontier moved, and
// then writes the record. A process killed between the two leaves the file
// ahead of the record; so does another program that moved the file (nanobot's
// own Dream). Either way the file wins when they differ: every scope's
// cursor follows it.
type Ledger struct {
	dir  string // the workspace
	hist History
	log  *slog.Logger
	hook func(point string) // nil: none
	// lock is the Dream lock; write the record lock.
	lock  flight
	write recordLock
	cache recordCache
	// st keeps the record and the locks in a database (NewLedgerIn, the
	// store's PostgreSQL engine); nil keeps them in files.
	st store.DreamLedger
}

// NewLedger returns the ledger of the workspace dir whose history is hist.
// It touches nothing on disk. A Dreamer makes its own (Dreamer.Ledger); cmd
// makes one where no Dreamer runs (Dream off) for the retention, the deep
// Dream's requests and /metrics.
func NewLedger(dir string, hist History, logger *slog.Logger) *Ledger {
	return NewLedgerIn(dir, hist, nil, logger)
}

// NewLedgerIn is NewLedger keeping the record and its locks in st (the
// store's PostgreSQL engine) instead of memory/.dream_ledger and its lock
// files; nil is NewLedger. The memory repository stays the workspace's.
func NewLedgerIn(dir string, hist History, st store.DreamLedger, logger *slog.Logger) *Ledger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Ledger{dir: dir, hist: hist, log: logger, st: st, lock: flight{path: lockPath(dir), st: st},
		write: recordLock{path: filepath.Join(dir, filepath.FromSlash(workspace.DreamLedgerLock)), st: st}}
}

// record is the content of memory/.dream_ledger: a plain value, so that
// another engine can keep it as it is.
type record struct {
	Version int `json:"version"`
	// Frontier is the value the ledger last wrote to memory/.dream_cursor:
	// the least cursor of the scopes.
	Frontier int `json:"frontier"`
	// Scopes holds each memory scope's progress, by scope name
	// (DefaultScope is ""). A name audience.ParseScope refuses makes the
	// record unreadable (damaged), never a path.
	Scopes map[audience.Scope]*progress `json:"scopes"`
	// Head is the full id of the memory repository's commit whose step
	// the ledger took in last: its files are written and what its
	// trailers say is recorded here. Commits after it are steps a kill
	// interrupted (or made with the git command line); the next start
	// finishes them from the commits. "" before the first step.
	Head string `json:"head,omitempty"`
	// Intent and DeepWriting are what versions before whole steps left
	// while their edits were on disk with no commit holding them (phase 2
	// edited the files themselves); the recovery commits those edits as
	// Dream's once. Never written now.
	Intent      *intent      `json:"intent,omitempty"`
	DeepWriting *deepWriting `json:"deep_writing,omitempty"`
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
	// DeepAsked: a prompt found the scope over its budget and asked for a
	// deep Dream at the next Dream (RequestDeep).
	DeepAsked bool `json:"deep_asked,omitempty"`
	// DeepHeld is set by a restore that undid a deep Dream: the size in
	// tokens the scope's memory must grow past before it is compacted
	// again (by a deep Dream, or by a batch's aging); 0 when not held.
	DeepHeld int `json:"deep_held,omitempty"`
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

// cursors are the scopes' cursors, by name.
func (r *record) cursors() map[audience.Scope]int {
	out := make(map[audience.Scope]int, len(r.Scopes))
	for name, p := range r.Scopes {
		out[name] = p.Cursor
	}
	return out
}

func (l *Ledger) path() string {
	return filepath.Join(l.dir, filepath.FromSlash(workspace.DreamLedger))
}

// loaded is the record as read, and what reading it found.
type loaded struct {
	rec record
	// exists: the record file was there; legacy: files of earlier
	// versions were found (and read into rec when the record was not
	// there; the deep Dream's requests always); followed: the cursor
	// file had moved from the record's frontier (from).
	exists, legacy, followed bool
	from                     int
	// damaged says what could not be decoded (the record, or an old file
	// being migrated); the progress it held starts afresh from the cursor
	// file: at worst a failure count starts again, or findings are
	// analysed again.
	damaged error
}

// read reads the record and the cursor file and makes them agree (in
// memory). Without a record, the files of earlier versions are read into
// one. An error means the files could not be read at all.
func (l *Ledger) read() (loaded, error) {
	var ld loaded
	cursor, err := l.hist.DreamCursor()
	if err != nil {
		return ld, fmt.Errorf("read dream cursor: %w", err)
	}
	ld.exists, err = l.readRecord(&ld.rec)
	switch {
	case err != nil && !ld.exists:
		return ld, err
	case err != nil:
		ld.rec, ld.damaged = record{Frontier: cursor}, err
	}
	if !ld.exists {
		ld.rec = record{Frontier: cursor}
	}
	ld.legacy, ld.damaged = l.readLegacy(&ld.rec, ld.exists, ld.damaged)
	ld.rec.Version = ledgerVersion
	ld.rec.scope(DefaultScope)
	ld.from = ld.rec.Frontier
	ld.followed = ld.rec.follow(cursor)
	return ld, nil
}

// put writes rec: every scope with entries past the old frontier is
// recorded before the frontier moves, then the cursor file moves when the
// frontier did, then the record, each atomically. The caller holds the
// record lock.
func (l *Ledger) put(rec *record, fence *store.Fence) error { return l.putVia(rec, nil, fence) }

// putVia is put writing the cursor and the record through tx, a
// transaction of the database that keeps them (nil: each on its own),
// the record under fence when set (a scope's lease, lease.go).
func (l *Ledger) putVia(rec *record, tx store.LedgerTx, fence *store.Fence) error {
	setCursor := l.hist.SetDreamCursor
	if tx != nil {
		setCursor = tx.SetDreamCursor
	}
	if f := rec.frontier(); f > rec.Frontier {
		bl, _, err := l.hist.Backlogs(rec.Frontier, rec.cursors())
		if err != nil {
			return fmt.Errorf("dream backlog before moving the frontier: %w", err)
		}
		for _, b := range bl {
			rec.scope(b.Scope) // at the old frontier: the frontier stays below its entries
		}
	}
	if f := rec.frontier(); f != rec.Frontier {
		if err := setCursor(f); err != nil {
			return fmt.Errorf("set dream cursor to %d: %w", f, err)
		}
		rec.Frontier = f
	}
	rec.Version = ledgerVersion
	if err := l.writeRecord(rec, tx, fence); err != nil {
		return err
	}
	if l.hook != nil {
		l.hook(PointLedger)
	}
	return nil
}

// update changes the record under the record lock: it reads the record as
// it is on disk now (another process may have asked for a deep Dream),
// applies change and writes it, returning the record written. An error
// leaves the record as it was (but for a cursor file already moved: the
// next read follows it).
func (l *Ledger) update(change func(r *record)) (record, error) { return l.updateUnder(nil, change) }

// updateUnder is update with the write fenced by a scope's lease (a
// Dream's, lease.go); nil is unfenced.
func (l *Ledger) updateUnder(fence *store.Fence, change func(r *record)) (record, error) {
	unlock, err := l.write.lock()
	if err != nil {
		return record{}, err
	}
	defer unlock()
	ld, err := l.read()
	if err != nil {
		return record{}, err
	}
	change(&ld.rec)
	if err := l.put(&ld.rec, fence); err != nil {
		return record{}, err
	}
	return ld.rec, nil
}

// held is the ledger while its caller holds the Dream lock: the record as
// last read or written, kept in step with the disk by update.
type held struct {
	l       *Ledger
	rec     record
	release func()
	// fence, while a scope's lease is held, fences the record's writes
	// (lease.go).
	fence *store.Fence
}

// begin takes the Dream lock — never waiting: a *BusyError when a Dream, a
// restore or a retention pass holds it here or in another process — then
// reads the record, moving the files of earlier versions into it once and
// following the cursor file. The caller must call end.
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
	if ld.legacy {
		if err := l.migrate(h, ld.exists); err != nil {
			h.end()
			return nil, err
		}
	}
	return h, nil
}

// end releases the Dream lock.
func (h *held) end() { h.release() }

// scope is a scope's progress as held, for reading; changes go through the
// transitions (transitions.go).
func (h *held) scope(name audience.Scope) progress { return *h.rec.scope(name) }

// update is Ledger.update keeping the held record in step.
func (h *held) update(change func(r *record)) error {
	rec, err := h.l.updateUnder(h.fence, change)
	if err != nil {
		return err
	}
	h.rec = rec
	return nil
}

// Cursor is the highest history cursor the scope has consumed: the
// entries of the scope up to it are in its memory (a scope the ledger does
// not know yet has read up to the frontier). A chat turn asks it (the
// prompt's Recent history), so the record is decoded again only when the
// file was replaced since (atomically: a new file each write).
func (l *Ledger) Cursor(scope audience.Scope) (int, error) {
	rec, ok := l.cached()
	if !ok {
		ld, err := l.read()
		if err != nil {
			return 0, err
		}
		return ld.rec.scope(scope).Cursor, nil
	}
	cursor, err := l.hist.DreamCursor()
	if err != nil {
		return 0, fmt.Errorf("read dream cursor: %w", err)
	}
	c := rec.Frontier
	if p := rec.Scopes[scope]; p != nil {
		c = p.Cursor
	}
	// As read would follow the cursor file (record.follow).
	switch {
	case cursor > rec.Frontier:
		c = max(c, cursor)
	case cursor < rec.Frontier:
		c = min(c, cursor)
	}
	return c, nil
}

// recordCache is the last record Cursor decoded and the file it came
// from.
type recordCache struct {
	mu  sync.Mutex
	fi  os.FileInfo
	rec *record // never changed once cached
}

// cached is the record as on disk, decoded once per file; ok is false
// when there is no record file, or files of earlier versions still wait to
// be moved in (read does both).
func (l *Ledger) cached() (*record, bool) {
	if l.st != nil {
		var rec record
		if ok, err := l.readRecord(&rec); !ok || err != nil {
			return nil, false
		}
		return &rec, true
	}
	fi, err := os.Stat(l.path())
	if err != nil {
		return nil, false
	}
	c := &l.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != nil && os.SameFile(c.fi, fi) && c.fi.Size() == fi.Size() && c.fi.ModTime().Equal(fi.ModTime()) {
		return c.rec, true
	}
	for _, f := range l.legacyFiles() {
		if _, err := os.Stat(f.path); err == nil {
			return nil, false
		}
	}
	var rec record
	if ok, err := readJSON(l.path(), "dream ledger", &rec); !ok || err != nil {
		return nil, false
	}
	c.fi, c.rec = fi, &rec
	return c.rec, true
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
	bl, last, err = l.hist.Backlogs(rec.Frontier, rec.cursors())
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

// readRecord reads the record into rec, as readJSON does: from the file,
// or from the database.
func (l *Ledger) readRecord(rec *record) (ok bool, err error) {
	if l.st == nil {
		return readJSON(l.path(), "dream ledger", rec)
	}
	b, ok, err := l.st.Record()
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, rec); err != nil {
		return true, fmt.Errorf("decode dream ledger: %w", err)
	}
	return true, nil
}

// writeRecord writes rec to the file, atomically, or to the database (in
// the transaction tx when not nil) — there under fence, when set, checked
// in the same transaction.
func (l *Ledger) writeRecord(rec *record, tx store.LedgerTx, fence *store.Fence) error {
	if l.st == nil {
		return writeJSON(l.path(), "dream ledger", rec)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode dream ledger: %w", err)
	}
	if tx != nil {
		if fence != nil {
			ft, ok := tx.(store.FencedTx)
			if !ok {
				return fmt.Errorf("write dream ledger: its transaction cannot check the scope's lease (%s)", fence.Lease)
			}
			if err := ft.CheckFence(*fence); err != nil {
				return err
			}
		}
		return tx.PutRecord(b)
	}
	if fl, ok := l.st.(store.FencedLedger); ok && fence != nil {
		return fl.PutRecordFenced(b, *fence)
	}
	return l.st.PutRecord(b)
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
