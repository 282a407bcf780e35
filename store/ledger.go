package store

import "time"

// DreamLedger keeps Dream's ledger (dream.Ledger): one record, the JSON of
// dream's record type, and the ledger's two locks — the record lock
// (short: one read, change and write of the record) and the Dream lock
// (long: one Dream, restore or retention pass at a time, never waited
// for). The embedded engine keeps them as memory/.dream_ledger and its
// flocks.
type DreamLedger interface {
	// Record returns the record; ok is false when none was written.
	Record() (rec []byte, ok bool, err error)
	// PutRecord replaces the record. The caller holds the record lock.
	PutRecord(rec []byte) error
	// LockRecord waits for the record lock and returns its unlock.
	LockRecord() (unlock func(), err error)
	// TryDream takes the Dream lock without waiting, noting now as when
	// its holder started; when another holds it, ok is false and since
	// says when that one started (zero when unknown).
	TryDream(now time.Time) (release func(), ok bool, since time.Time, err error)
}

// LedgerTx writes a ledger step within a transaction of the database that
// keeps the ledger, the Dream cursor and the memory repository (the
// memory repository's write on PostgreSQL; gitstore.Store.CommitChangesWith
// hands it over): a Dream step's commit, its ref and what the ledger takes
// in of it land together or not at all. Nothing is visible to others
// before the transaction commits.
type LedgerTx interface {
	// PutRecord replaces the ledger's record, as DreamLedger.PutRecord.
	PutRecord(rec []byte) error
	// SetDreamCursor records n as consumed, as DreamCursor.SetDreamCursor.
	SetDreamCursor(n int) error
}

// Fence names a lease at an epoch: a write made under it is refused with
// ErrLeaseLost once another process took the lease.
type Fence struct {
	Lease string
	Epoch int64
}

// FencedLedger is a DreamLedger whose record writes can be fenced: the
// write happens only while the lease is at the fence's epoch.
type FencedLedger interface {
	PutRecordFenced(rec []byte, f Fence) error
}

// FencedTx is a LedgerTx that checks a fence within its transaction: the
// writes that follow happen only while the lease is at the fence's epoch.
type FencedTx interface {
	CheckFence(f Fence) error
}
