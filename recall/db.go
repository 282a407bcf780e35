package recall

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"modernc.org/sqlite"
)

// The index is one SQLite database (cgo-free, through modernc.org/sqlite)
// with an FTS5 full-text table. Its types stay in this file and the ones
// that query it; nothing of the driver leaves the package.

// dbFile is the index's file name in Options.Dir; SQLite adds "-wal" and
// "-shm" beside it.
const dbFile = "index.db"

// lockFile is the writer's lock (see doc.go).
const lockFile = "index.lock"

// schemaVersion changes whenever the schema or what is indexed changes: an
// index of another version is rebuilt.
const schemaVersion = "4"

// Document kinds.
const (
	kindHistory = 1
	kindMessage = 2
	kindCold    = 3
)

// A document's rowid says its scope and when it was said, so that a
// scope's rows in rowid order are in time order: the newest rows holding a
// word are the first a search reads, and equals are ranked newest first
// without reading their times.
//
//	rowid = scope id << scopeShift | minute << slotBits | slot
//
// minute counts from rowEpoch (clamped to its 25 bits: 1970-2083; an
// unknown time is minute 0) and slot numbers the documents of one minute
// (a full minute's documents go in the next).
const (
	scopeShift = 40
	slotBits   = 15
	maxMinute  = 1<<(scopeShift-slotBits) - 1
)

var rowEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// rowMinute is the minute part of the rowid of a document said at unix
// time at.
func rowMinute(at int64) int64 {
	if at <= rowEpoch {
		return 0
	}
	return min((at-rowEpoch)/60, maxMinute)
}

// rowTime orders rows of different scopes by when they were said.
func rowTime(id int64) int64 { return id & (1<<scopeShift - 1) }

// termsTable is the name of scope id's full-text table. Each scope has its
// own: a search reads only the tables of the scopes it may read, so no
// query text can reach another scope's rows, and a word common elsewhere
// costs a scope's search nothing. It holds the index alone (the text is in
// docs): detail=none keeps it small, since a search asks only which rows
// hold a word.
func termsTable(id int64) string { return "terms_" + strconv.FormatInt(id, 10) }

func createTerms(id int64) string {
	return `CREATE VIRTUAL TABLE IF NOT EXISTS ` + termsTable(id) + ` USING fts5(text, content='', contentless_delete=1,
		detail=none, tokenize='porter unicode61 remove_diacritics 2')`
}

var schema = []string{
	`CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	`CREATE TABLE scopes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, docs INTEGER NOT NULL DEFAULT 0)`,
	// docs holds what a match shows: kind, when (unix seconds, 0 unknown),
	// the conversation key, the position (history cursor, message index,
	// cold-memory line), who said it, and the text.
	`CREATE TABLE docs(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, at INTEGER NOT NULL, conv TEXT NOT NULL,
		pos INTEGER NOT NULL, who TEXT NOT NULL, text TEXT NOT NULL)`,
	`CREATE INDEX cold_docs ON docs(id) WHERE kind = 3`,
	// convs: how far each conversation generation was read; files: the
	// stamp each message file was last read under; cold: each cold-memory
	// file's.
	`CREATE TABLE convs(ident TEXT PRIMARY KEY, next INTEGER NOT NULL, at INTEGER NOT NULL)`,
	`CREATE TABLE files(name TEXT PRIMARY KEY, stamp TEXT NOT NULL)`,
	`CREATE TABLE cold(scope TEXT PRIMARY KEY, stamp TEXT NOT NULL)`,
	// ranges: the conversation messages each archive entry was made from
	// (its generation's ident, lo up to but not including hi) and the
	// scope the entry is in, which those messages are searched in.
	`CREATE TABLE ranges(ident TEXT NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL, scope TEXT NOT NULL)`,
	`CREATE INDEX ranges_ident ON ranges(ident)`,
}

// openDB opens the index database in dir, creating it with the schema
// when missing. fresh reports that it was created (empty). An existing
// file of another version, or one that is not a database, is an error
// wrapping errCorrupt: the caller rebuilds.
func openDB(ctx context.Context, dir string) (db *sql.DB, fresh bool, err error) {
	path := filepath.Join(dir, dbFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fresh = true
		// SQLite gives the -wal and -shm files the database's mode: made
		// here first, all three are the owner's alone.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("create recall index: %w", err)
		}
		_ = f.Close()
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err = sql.Open("sqlite", dsn)
	if err != nil {
		return nil, false, fmt.Errorf("open recall index: %w", err)
	}
	if fresh {
		err = createSchema(ctx, db)
	} else {
		err = checkVersion(ctx, db)
	}
	if err != nil {
		_ = db.Close()
		return nil, false, err
	}
	return db, fresh, nil
}

func createSchema(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify(fmt.Errorf("create recall index: %w", err))
	}
	defer tx.Rollback()
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return classify(fmt.Errorf("create recall index: %w", err))
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta(k, v) VALUES ('version', ?)`, schemaVersion); err != nil {
		return classify(fmt.Errorf("create recall index: %w", err))
	}
	return classify(tx.Commit())
}

func checkVersion(ctx context.Context, db *sql.DB) error {
	var v string
	err := db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'version'`).Scan(&v)
	if err != nil {
		if isSQLite(err) {
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		return fmt.Errorf("read recall index: %w", err)
	}
	if v != schemaVersion {
		return fmt.Errorf("%w: version %q, want %q", errCorrupt, v, schemaVersion)
	}
	return nil
}

// errCorrupt marks an index to rebuild: damaged, not a database, or of
// another version.
var errCorrupt = errors.New("recall index unusable")

// SQLite's primary result codes that mean the file is not a usable index.
const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT
	sqliteNotADB  = 26 // SQLITE_NOTADB
)

// classify wraps errCorrupt into an error SQLite reports about a damaged
// file, so the caller rebuilds.
func classify(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqliteCorrupt, sqliteNotADB:
		return fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return err
}

func isSQLite(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se)
}

// removeDB deletes the index's files, for a rebuild.
func removeDB(dir string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, dbFile+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// getMeta reads a meta value ("" when absent).
func getMeta(ctx context.Context, q querier, k string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = ?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, classify(err)
}

func setMeta(ctx context.Context, tx *sql.Tx, k, v string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta(k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, k, v)
	return classify(err)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
