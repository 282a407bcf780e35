package recall

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/gofrs/flock"
)

// IndexFiles is the recall index's embedded engine (store.RecallIndex): a
// SQLite database in a folder of the state directory, owner-only, with a
// lock file for its one writer across processes. It is a cache: nothing
// is lost when it is removed, the next update builds it again. Opening it
// costs nothing; the database is opened on first use, and created only by
// a writer, so that two processes never both make one.
type IndexFiles struct {
	dir  string
	lock *flock.Flock

	mu sync.Mutex
	// db is the open database, nil before first use and after a reset;
	// dbInfo is the file it was opened on, so a rebuild by another
	// process (a new file at the path) is noticed.
	db     *sql.DB
	dbInfo os.FileInfo
	closed bool
}

var _ store.RecallIndex = (*IndexFiles)(nil)

// OpenIndexFiles returns the index kept in dir. It touches no file.
func OpenIndexFiles(dir string) *IndexFiles {
	return &IndexFiles{dir: dir, lock: flock.New(filepath.Join(dir, lockFile), flock.SetPermissions(0o600))}
}

// Close closes the database; later calls return ErrClosed.
func (f *IndexFiles) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.db != nil {
		err := f.db.Close()
		f.db = nil
		return err
	}
	return nil
}

// handle returns the open database, opening it first. Only the writer
// (create, under the lock) creates a missing one; for a reader it is
// errNoIndex.
func (f *IndexFiles) handle(ctx context.Context, create bool) (*sql.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	path := filepath.Join(f.dir, dbFile)
	fi, err := os.Stat(path)
	if f.db != nil {
		if err == nil && os.SameFile(fi, f.dbInfo) {
			return f.db, nil
		}
		// Another process rebuilt the index: a new file at the path.
		_ = f.db.Close()
		f.db = nil
	}
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, errNoIndex
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create recall dir: %w", err)
	}
	db, _, err := openDB(ctx, f.dir)
	if err != nil {
		return nil, err
	}
	if fi, err = os.Stat(path); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open recall index: %w", err)
	}
	f.db, f.dbInfo = db, fi
	return db, nil
}

// errNoIndex: there is no index file yet; the writer makes it.
var errNoIndex = errors.New("no recall index yet")

// reader is the database for a read: nil (and no error) when there is no
// index yet, which reads as an empty one.
func (f *IndexFiles) reader(ctx context.Context) (*sql.DB, error) {
	db, err := f.handle(ctx, false)
	if errors.Is(err, errNoIndex) {
		return nil, nil
	}
	return db, err
}

// scope returns the id and document count of scope s; ok is false when
// nothing was indexed there.
func scopeRowOf(ctx context.Context, q querier, s audience.Scope) (id, docs int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT id, docs FROM scopes WHERE name = ?`, string(s)).Scan(&id, &docs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, classify(fmt.Errorf("read recall scope: %w", err))
	}
	return id, docs, true, nil
}

// Count implements store.RecallIndex.
func (f *IndexFiles) Count(ctx context.Context, s audience.Scope) (int, error) {
	db, err := f.reader(ctx)
	if db == nil {
		return 0, err
	}
	_, n, _, err := scopeRowOf(ctx, db, s)
	return int(n), err
}

// Match implements store.RecallIndex: the scope's own full-text table,
// read newest row first.
func (f *IndexFiles) Match(ctx context.Context, s audience.Scope, terms []string, limit int, within time.Duration) ([]store.RecallHit, error) {
	db, err := f.reader(ctx)
	if db == nil || len(terms) == 0 {
		return nil, err
	}
	id, _, ok, err := scopeRowOf(ctx, db, s)
	if !ok {
		return nil, err
	}
	mctx := ctx
	if within > 0 {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	}
	ids, err := matchIDs(mctx, db, id, matchAll(terms), limit)
	if err != nil && within > 0 && ctx.Err() == nil && mctx.Err() != nil {
		err = nil // out of time: the rows found so far
	}
	if err != nil {
		return nil, err
	}
	hits := make([]store.RecallHit, len(ids))
	for i, id := range ids {
		hits[i] = store.RecallHit{ID: id, Order: rowTime(id)}
	}
	return hits, nil
}

// matchIDs returns the newest rows (at most limit) of scope id that match
// q; with an error, also those read before it.
func matchIDs(ctx context.Context, db *sql.DB, id int64, q string, limit int) ([]int64, error) {
	t := termsTable(id)
	rows, err := db.QueryContext(ctx, `SELECT rowid FROM `+t+` WHERE `+t+` MATCH ? ORDER BY rowid DESC LIMIT ?`, q, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("search: %w", err))
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return ids, classify(err)
		}
		ids = append(ids, id)
	}
	return ids, classify(rows.Err())
}

// Read implements store.RecallIndex.
func (f *IndexFiles) Read(ctx context.Context, ids []int64) ([]store.RecallRow, error) {
	db, err := f.reader(ctx)
	if db == nil || len(ids) == 0 {
		return nil, err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := db.QueryContext(ctx, `SELECT d.id, d.kind, d.at, d.conv, d.pos, d.who, d.text, s.name FROM docs d
		JOIN scopes s ON s.id = (d.id >> `+fmt.Sprint(scopeShift)+`) WHERE d.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, classify(fmt.Errorf("read matches: %w", err))
	}
	defer rows.Close()
	byID := make(map[int64]store.RecallRow, len(ids))
	for rows.Next() {
		var r store.RecallRow
		var scope string
		if err := rows.Scan(&r.ID, &r.Kind, &r.At, &r.Conversation, &r.Pos, &r.Who, &r.Text, &scope); err != nil {
			return nil, classify(fmt.Errorf("read matches: %w", err))
		}
		r.Scope = audience.Scope(scope)
		byID[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("read matches: %w", err))
	}
	out := make([]store.RecallRow, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// Mark implements store.RecallIndex.
func (f *IndexFiles) Mark(ctx context.Context, name string) (string, error) {
	db, err := f.reader(ctx)
	if db == nil {
		return "", err
	}
	var v string
	err = db.QueryRowContext(ctx, `SELECT value FROM marks WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, classify(err)
}

// Update implements store.RecallIndex: the writer holds the lock file
// while fn runs, and creates the database when it is missing. An index it
// cannot open (damaged, not a database, of another version) is an error
// wrapping store.ErrRecallUnusable.
func (f *IndexFiles) Update(ctx context.Context, fn func(store.RecallWriter) error) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("create recall dir: %w", err)
	}
	ok, err := f.lock.TryLock()
	if err != nil {
		return fmt.Errorf("lock recall index: %w", err)
	}
	if !ok {
		return store.ErrRecallBusy
	}
	defer func() { _ = f.lock.Unlock() }()
	db, err := f.handle(ctx, true)
	if err != nil {
		return err
	}
	w := &filesWriter{db: db, ctx: ctx, scopes: map[audience.Scope]*scopeRow{}}
	defer w.rollback()
	if err := fn(w); err != nil {
		return err
	}
	return w.Commit()
}

// Reset implements store.RecallIndex: it removes the index's files, once
// no other process is updating them (waiting within ctx), so that the next
// update builds it anew; a process searching the old one notices the new
// file at its next search.
func (f *IndexFiles) Reset(ctx context.Context) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("create recall dir: %w", err)
	}
	ok, err := f.lock.TryLockContext(ctx, 50*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("lock recall index: %w", cmp.Or(err, ctx.Err(), store.ErrRecallBusy))
	}
	defer func() { _ = f.lock.Unlock() }()
	f.mu.Lock()
	if f.db != nil {
		_ = f.db.Close()
		f.db = nil
	}
	f.mu.Unlock()
	if err := removeDB(f.dir); err != nil {
		return fmt.Errorf("remove recall index: %w", err)
	}
	return nil
}
