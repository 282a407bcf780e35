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

	"github.com/dreamgate/dreamgate/store"
	"modernc.org/sqlite"
)

// The embedded engine's index is one SQLite database (cgo-free, through
// modernc.org/sqlite) with an FTS5 full-text table per scope. Its types
// stay in this file and the ones that query it (files.go,
// fileswriter.go); nothing of the driver leaves the package.

// dbFile is the index's file name in Options.Dir; SQLite adds "-wal" and
// "-shm" beside it.
const dbFile = "index.db"

// lockFile is the writer's lock (see doc.go).
const lockFile = "index.lock"

// schemaVersion changes whenever the schema or what is indexed changes: an
// index of another version is rebuilt.
const schemaVersion = "5"

// A document's rowid says its scope and when it was said, so that a
// scope's rows in rowid order are in time order: the newest rows holding a
// word are the first a search reads, and equals are ranked newest first
// without reading their times.
//
//	rowid = scope id << scopeShift | store.RecallMinute << RecallSlotBits | slot
//
// The slot numbers the documents of one minute (a full minute's documents
// go in the next); the part below the scope is the document's
// store.RecallHit.Order.
const scopeShift = 40

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
	// meta: the file's version.
	`CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	`CREATE TABLE scopes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, docs INTEGER NOT NULL DEFAULT 0)`,
	// docs holds what a match shows: kind, when (unix seconds, 0 unknown),
	// the conversation key, the position (history cursor, message index,
	// cold-memory line), who said it, and the text.
	`CREATE TABLE docs(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, at INTEGER NOT NULL, conv TEXT NOT NULL,
		pos INTEGER NOT NULL, who TEXT NOT NULL, text TEXT NOT NULL)`,
	`CREATE INDEX cold_docs ON docs(id) WHERE kind = 3`,
	// marks: how far the index read its sources (store.RecallWriter).
	`CREATE TABLE marks(name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
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
var errCorrupt = store.ErrRecallUnusable

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

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
