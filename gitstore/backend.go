package gitstore

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
)

// backend is where a Store's repository lives: a git directory beside the
// workspace (filesBackend), or a database (dbBackend, db.go). The Store's
// logic — lines, commits, history, diffs, restores — is the same over
// both; a backend keeps the objects, the refs and the stored commit index,
// and makes a write whole.
type backend interface {
	// objects is the object storage (go-git's) of the operation under way:
	// within a write, its transaction's.
	objects() storage.Storer
	// ref reads a ref: plumbing.ErrReferenceNotFound when there is none,
	// a *refDamage when it holds no usable value.
	ref(name plumbing.ReferenceName) (*plumbing.Reference, error)
	// setRefs moves every ref of ups or none of them, each only where it
	// still has its old value (storage.ErrReferenceHasChanged otherwise).
	// Within a write it lands with the write.
	setRefs(ups []refUpdate) error
	// lineRefs lists the refs under refs/<prefix>/ that may have changed
	// since the stamp since ("": all of them; a removed one with the zero
	// id), whether that is every one of them (complete), and the stamp to
	// pass next time. Nothing changed: nil.
	lineRefs(prefix, since string) (refs map[plumbing.ReferenceName]plumbing.Hash, complete bool, stamp string, err error)
	// refsStamp is the stamp lineRefs would return now, cheaply.
	refsStamp(prefix string) (string, error)
	// write runs fn as one write: under the repository's writer lock
	// (index.lock; a database's row lock), its objects, refs and commit
	// index landing together when fn returns nil (a database commits;
	// files are written as fn goes, the refs last).
	write(fn func() error) error
	index() indexStore
	// objectIDs lists the ids of the objects that start with the hex
	// prefix (at least 2 digits).
	objectIDs(prefix string) ([]plumbing.Hash, error)
	// quickStamp changes whenever any ref changes, in one cheap look; ok
	// is false when the backend has none (the index is then checked
	// against the refs each time).
	quickStamp() (stamp string, ok bool)
}

// refUpdate moves one ref: to new (a hash or symbolic reference), where it
// holds old (nil: where it does not exist). A nil new removes it.
type refUpdate struct {
	name     plumbing.ReferenceName
	new, old *plumbing.Reference
}

// indexStore keeps the commit index (commitindex.go) as text: lines
// appended, or the whole replaced. It is a cache of the refs' history in
// both backends, read at start and caught up as other writers add to it.
type indexStore interface {
	// load returns the stored index and its stamp (its length); nothing
	// stored is nil and -1.
	load() ([]byte, int64, error)
	// stamp is the stored index's stamp now, cheaply.
	stamp() (int64, error)
	// append adds data at the end when the stored index still has the
	// stamp at (errIndexMoved otherwise) and returns the new stamp.
	append(at int64, data []byte) (int64, error)
	// replace stores data as the whole index and returns its stamp.
	replace(data []byte) (int64, error)
}

// errIndexMoved: another writer changed the stored commit index since this
// Store last read it.
var errIndexMoved = errors.New("the stored commit index changed meanwhile")
