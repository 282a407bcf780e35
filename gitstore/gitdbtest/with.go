package gitdbtest

import (
	"errors"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
)

// CommitWith: a step's commit carries the caller's write in its
// transaction — both land, or (the caller's write failing) neither, the
// Store going on from the database's history as if the commit was never
// tried.
func CommitWith(t *testing.T, db gitstore.DB) {
	s, err := gitstore.OpenDB(db, Options())
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	step := []gitstore.Change{{Path: teamMemory, Data: []byte("- ships on Fridays\n")}}
	refused := errors.New("the ledger refused")
	_, err = s.CommitChangesWith(head.SHA, step, "dream: team", "", func(c gitstore.Commit, tx gitstore.DBTx) error {
		if err := tx.SetRecord("ledger", []byte(c.SHA)); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("CommitChangesWith whose write fails = %v, want its error", err)
	}
	if h, err := s.Head(); err != nil || h.SHA != head.SHA {
		t.Errorf("head after a rolled back step = %s, %v; want %s", h.Short, err, head.Short)
	}
	if rec, _ := db.Reader().Record("ledger"); rec != nil {
		t.Errorf("the caller's write of a rolled back step stayed: %q", rec)
	}
	if got := fileAt(t, s, head.SHA, teamMemory); got != "(none)" {
		t.Errorf("the team's memory after a rolled back step = %q", got)
	}
	c, err := s.CommitChangesWith(head.SHA, step, "dream: team", "", func(c gitstore.Commit, tx gitstore.DBTx) error {
		return tx.SetRecord("ledger", []byte(c.SHA))
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := db.Reader().Record("ledger"); string(rec) != c.SHA {
		t.Errorf("the caller's write = %q, want the commit %s", rec, c.SHA)
	}
	// A second process sees the commit and the write together.
	s2, err := gitstore.OpenDB(db, Options())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := s2.Head(); err != nil || h.SHA != c.SHA {
		t.Errorf("the second process's head = %s, %v; want %s", h.Short, err, c.Short)
	}
	if got := fileAt(t, s2, c.SHA, teamMemory); got != "- ships on Fridays\n" {
		t.Errorf("the team's memory = %q", got)
	}
	if log, err := s.Log(0, "", nil); err != nil || len(log) != 2 {
		t.Errorf("Log after one rolled back and one landed step = %d commits, %v; want 2", len(log), err)
	}
}
