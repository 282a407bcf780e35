package gitstore

import (
	"errors"
)

// A repository kept in a database (dreamgate's PostgreSQL engine) has no
// git directory and no workspace: its objects, refs and records are rows,
// each write one transaction of the database. The Store's logic is the
// same over it as over files (backend.go); what a database keeps is said
// here in plain types, so the engine that implements it (store/postgres)
// needs no go-git type, and go-git's storage interface over it
// (dbStorer, dbstorer.go) stays in this package.

// DB is a database that keeps one repository.
type DB interface {
	// Reader reads what is committed, each call on its own.
	Reader() DBTx
	// Write runs fn in one transaction, which commits when fn returns nil
	// and rolls back otherwise (fn's error is returned). Writes are one at
	// a time across processes: a second waits for the first to end.
	Write(fn func(tx DBTx) error) error
}

// DBTx is what a repository reads and writes of a database, within a
// transaction or not: its objects, its refs and its records.
type DBTx interface {
	DBObjects
	DBRefs
	DBRecords
}

// DBObjects are the repository's objects, by id (40 hex digits). An
// object never changes.
type DBObjects interface {
	// Object is the object id's kind ("commit", "tree", "blob", "tag") and
	// content; ok is false when there is none.
	Object(id string) (kind string, data []byte, ok bool, err error)
	// PutObject stores an object; one already there stays as it is.
	PutObject(id, kind string, data []byte) error
	// Objects lists, sorted, the ids that start with the hex prefix ("":
	// every one), of the kind ("": any).
	Objects(prefix, kind string) ([]string, error)
	// GetObjects returns those of the objects ids that there are, in one
	// look (a copy reads thousands).
	GetObjects(ids []string) ([]DBObject, error)
	// PutObjects stores objects at once, as PutObject each.
	PutObjects(objs []DBObject) error
}

// DBObject is an object as a database keeps it.
type DBObject struct {
	ID, Kind string
	Data     []byte
}

// DBRefs are the repository's refs: a value is an object id, or "ref:
// <name>" for a symbolic ref.
type DBRefs interface {
	// Ref is a ref's value; ok is false when there is none.
	Ref(name string) (value string, ok bool, err error)
	// SetRef sets name to value ("": removes it) where it holds old ("":
	// where there is none; AnyValue: whatever it holds). ok is false, and
	// nothing changed, when it held something else.
	SetRef(name, value, old string) (ok bool, err error)
	// Refs lists the refs whose names start with prefix and that changed
	// after the version since (0: every one; below 0: none), a removed one
	// with the value "", and the version now: every change of a ref raises
	// it, in the order the writes commit.
	Refs(prefix string, since int64) (map[string]string, int64, error)
}

// AnyValue is SetRef's old value for a ref set whatever it holds.
const AnyValue = "*"

// DBRecords are a repository's other records, by name: git's config and
// index, the shallow list, the commit index's parts.
type DBRecords interface {
	// Record is the named record (nil when there is none).
	Record(name string) ([]byte, error)
	// SetRecord replaces it (nil: removes it).
	SetRecord(name string, data []byte) error
	// Records lists the records whose names start with prefix, by name.
	Records(prefix string) (map[string][]byte, error)
}

// ErrNoWorkspace: the repository is kept in a database and has no
// workspace, so there are no files to commit from or write into (Commit,
// CommitPaths); steps commit their files with CommitChanges.
var ErrNoWorkspace = errors.New("the memory repository has no workspace files: it is kept in the database")
