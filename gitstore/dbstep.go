package gitstore

import (
	"errors"
	"fmt"
)

// InDatabase reports whether the repository is kept in a database
// (OpenDB): a step's commit can then carry the caller's own writes in its
// transaction (CommitChangesWith).
func (s *Store) InDatabase() bool {
	_, ok := s.be.(*dbBackend)
	return ok
}

// ErrNotInDatabase: CommitChangesWith on a repository kept in files, whose
// commit is no transaction another write could join.
var ErrNotInDatabase = errors.New("the memory repository is not kept in a database")

// CommitChangesWith is CommitChanges whose commit carries the caller's
// writes: with runs in the transaction that stores the commit and moves
// its ref, after both, with the commit made; when it fails, nothing of
// the commit stays and its error is returned. It is how a Dream step's
// commit, its ref and its ledger step land as one transaction (the
// ledger kept in the same database, written through tx). A repository
// kept in files is ErrNotInDatabase.
func (s *Store) CommitChangesWith(parent string, changes []Change, subject, body string, with func(c Commit, tx DBTx) error) (Commit, error) {
	defer s.lock()()
	if !s.InDatabase() {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, ErrNotInDatabase)
	}
	c, err := s.commitChanges(parent, changes, subject, body, with)
	if err != nil {
		return Commit{}, fmt.Errorf("commit %q: %w", subject, err)
	}
	return c, nil
}
