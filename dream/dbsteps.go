package dream

import (
	"errors"
	"fmt"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/store"
)

// Where the memory repository, the ledger's record and the Dream cursor
// are one database's (the PostgreSQL engine), a step's commit, its ref and
// its ledger step are one transaction (gitstore.Store.CommitChangesWith):
// the ledger takes the step in as its commit is made, under the record
// lock, and a kill anywhere leaves the step whole or absent — no start
// finds a commit the ledger lacks. On files the branch's move is the
// commit point and the ledger follows (step.go, recovery.go).

// errNoLedgerInTx: the repository's database hands over no ledger writer.
var errNoLedgerInTx = errors.New("the memory repository's database does not keep the Dream ledger")

// inOneTx reports whether steps land in one transaction with their ledger
// step: the repository and the ledger are kept in the database.
func (f fileSteps) inOneTx() bool { return f.d.repo.InDatabase() && f.h.l.st != nil }

// commitStep commits the step's changes on base. In one transaction with
// the ledger (inOneTx) the ledger takes the step in within the commit's
// transaction, and took is true.
func (f fileSteps) commitStep(base string, s step) (c gitstore.Commit, took bool, err error) {
	msg := withNote(s.body, s.note)
	if !f.inOneTx() {
		c, err = f.d.repo.CommitChanges(base, s.changes, s.subject, msg)
		return c, false, err
	}
	var rec record
	unlock := func() {}
	// The record lock is released once the transaction ended: no other
	// writer reads the record before the step's is the database's.
	defer func() { unlock() }()
	c, err = f.d.repo.CommitChangesWith(base, s.changes, s.subject, msg, func(c gitstore.Commit, tx gitstore.DBTx) error {
		ltx, ok := tx.(store.LedgerTx)
		if !ok {
			return errNoLedgerInTx
		}
		n := s.note
		n.Commit = c.Short
		when := f.d.now()
		var err error
		rec, unlock, err = f.h.l.updateIn(ltx, f.h.fence, func(r *record) {
			r.took(n, when)
			r.Head = c.SHA
		})
		if err != nil {
			return fmt.Errorf("the ledger's part of the step: %w", err)
		}
		return nil
	})
	if err != nil {
		return c, false, err
	}
	f.h.rec = rec
	return c, true, nil
}

// updateIn is update with the cursor and the record written through tx, a
// transaction of the database that keeps them, which commits after it
// returns — under fence, when set, checked in it (lease.go): the record
// lock stays held, and unlock (never nil) releases it once the
// transaction ended.
func (l *Ledger) updateIn(tx store.LedgerTx, fence *store.Fence, change func(r *record)) (rec record, unlock func(), err error) {
	release, err := l.write.lock()
	if err != nil {
		return record{}, func() {}, err
	}
	ld, err := l.read()
	if err != nil {
		release()
		return record{}, func() {}, err
	}
	change(&ld.rec)
	if err := l.putVia(&ld.rec, tx, fence); err != nil {
		release()
		return record{}, func() {}, err
	}
	return ld.rec, release, nil
}
