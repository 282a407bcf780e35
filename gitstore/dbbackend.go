package gitstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
)

// dbBackend keeps the repository in a DB: each write one transaction of
// it (objects, refs and the commit index's new part land together), reads
// through its reader between writes.
type dbBackend struct {
	db     DB
	cache  *objectCache
	reader *dbStorer
	cur    *dbStorer          // the write under way; nil between writes
	hook   func(point string) // the Store's AfterWrite report
	// rolledBack is told when a write's transaction did not commit: what
	// the Store learned within it (its commit index) is not the
	// database's.
	rolledBack func()
}

// Kill points of a write to a database (Options.AfterWrite).
const (
	// PointDBWrite: the write's objects, refs and commit index are sent,
	// its transaction not committed yet (a kill rolls it back).
	PointDBWrite = "gitstore-db-write"
	// PointDBCommit: the transaction committed.
	PointDBCommit = "gitstore-db-commit"
)

var _ backend = (*dbBackend)(nil)

func newDBBackend(db DB) *dbBackend {
	c := &objectCache{}
	return &dbBackend{db: db, cache: c, reader: newDBStorer(db.Reader(), c)}
}

// st is the storer of the operation: the write's, else the reader's.
func (b *dbBackend) st() *dbStorer {
	if b.cur != nil {
		return b.cur
	}
	return b.reader
}

func (b *dbBackend) objects() storage.Storer { return b.st() }

func (b *dbBackend) ref(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	return b.st().Reference(name)
}

func (b *dbBackend) setRefs(ups []refUpdate) error {
	if b.cur == nil {
		return b.write(func() error { return b.setRefs(ups) })
	}
	for _, u := range ups {
		was, value := "", ""
		if u.old != nil {
			was = refValue(u.old)
		}
		if u.new != nil {
			value = refValue(u.new)
		}
		ok, err := b.cur.tx.SetRef(u.name.String(), value, was)
		if err != nil {
			return fmt.Errorf("set %s: %w", u.name, err)
		}
		if !ok {
			return storage.ErrReferenceHasChanged
		}
	}
	return nil
}

// lineRefs lists the refs under refs/<prefix>/ that changed since the
// version since (all of them when since is ""); the stamp is the version.
func (b *dbBackend) lineRefs(prefix, since string) (map[plumbing.ReferenceName]plumbing.Hash, bool, string, error) {
	var from int64
	if since != "" {
		from, _ = strconv.ParseInt(since, 10, 64)
	}
	refs, version, err := b.st().tx.Refs("refs/"+prefix+"/", from)
	if err != nil {
		return nil, false, "", fmt.Errorf("list the lines' refs: %w", err)
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, v := range refs {
		n := plumbing.ReferenceName(name)
		switch ref, err := parseRefValue(n, v); {
		case v == "":
			out[n] = plumbing.ZeroHash // removed
		case err == nil && ref.Type() == plumbing.HashReference:
			out[n] = ref.Hash()
		}
	}
	return out, from == 0, strconv.FormatInt(version, 10), nil
}

// quickStamp is the refs' version: every change of any ref raises it.
func (b *dbBackend) quickStamp() (string, bool) {
	_, version, err := b.st().tx.Refs("", -1)
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(version, 10), true
}

func (b *dbBackend) refsStamp(prefix string) (string, error) {
	_, version, err := b.st().tx.Refs("refs/"+prefix+"/", -1)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(version, 10), nil
}

// write runs fn as one transaction of the database; a write within a
// write is part of it.
func (b *dbBackend) write(fn func() error) error {
	if b.cur != nil {
		return fn()
	}
	var done *dbStorer
	err := b.db.Write(func(tx DBTx) error {
		b.cur = newDBStorer(tx, b.cache)
		defer func() { done, b.cur = b.cur, nil }()
		if err := fn(); err != nil {
			return err
		}
		b.report(PointDBWrite)
		return nil
	})
	if err == nil && done != nil {
		done.commitPending()
		b.report(PointDBCommit)
	}
	if err != nil && b.rolledBack != nil {
		b.rolledBack()
	}
	return err
}

func (b *dbBackend) report(point string) {
	if b.hook != nil {
		b.hook(point)
	}
}

func (b *dbBackend) index() indexStore { return dbIndexStore{b} }

func (b *dbBackend) objectIDs(prefix string) ([]plumbing.Hash, error) {
	ids, err := b.st().tx.Objects(prefix, "")
	if err != nil {
		return nil, err
	}
	out := make([]plumbing.Hash, 0, len(ids))
	for _, id := range ids {
		if h, ok := parseHash(id); ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// dbIndexStore keeps the commit index as records: "commits/<n>" holds the
// n-th part appended (n from 1, ten digits), "commits" the number of
// parts, which is the stamp.
type dbIndexStore struct{ b *dbBackend }

const indexRecords = "commits"

func (x dbIndexStore) tx() DBTx { return x.b.st().tx }

func (x dbIndexStore) stamp() (int64, error) {
	data, err := x.tx().Record(indexRecords)
	if err != nil || data == nil {
		return -1, err
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return -1, nil // unreadable: as if none (the index is rebuilt)
	}
	return n, nil
}

func (x dbIndexStore) load() ([]byte, int64, error) {
	n, err := x.stamp()
	if err != nil || n < 0 {
		return nil, -1, err
	}
	parts, err := x.tx().Records(indexRecords + "/")
	if err != nil {
		return nil, -1, err
	}
	names := make([]string, 0, len(parts))
	for name := range parts {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) != int(n) {
		return nil, -1, nil // a part missing: rebuilt
	}
	var b strings.Builder
	for _, name := range names {
		b.Write(parts[name])
	}
	return []byte(b.String()), n, nil
}

func (x dbIndexStore) append(at int64, data []byte) (int64, error) {
	if x.b.cur == nil {
		var n int64
		err := x.b.write(func() error {
			var err error
			n, err = x.append(at, data)
			return err
		})
		return n, err
	}
	now, err := x.stamp()
	if err != nil {
		return -1, err
	}
	if at < 0 || now != at {
		return -1, errIndexMoved
	}
	if err := x.tx().SetRecord(partName(at+1), data); err != nil {
		return -1, err
	}
	return at + 1, x.tx().SetRecord(indexRecords, []byte(strconv.FormatInt(at+1, 10)))
}

func partName(n int64) string { return fmt.Sprintf("%s/%010d", indexRecords, n) }

func (x dbIndexStore) replace(data []byte) (int64, error) {
	if x.b.cur == nil {
		var n int64
		err := x.b.write(func() error {
			var err error
			n, err = x.replace(data)
			return err
		})
		return n, err
	}
	parts, err := x.tx().Records(indexRecords + "/")
	if err != nil {
		return -1, err
	}
	for name := range parts {
		if err := x.tx().SetRecord(name, nil); err != nil {
			return -1, err
		}
	}
	if data == nil {
		return -1, x.tx().SetRecord(indexRecords, nil)
	}
	if err := x.tx().SetRecord(partName(1), data); err != nil {
		return -1, err
	}
	return 1, x.tx().SetRecord(indexRecords, []byte("1"))
}
