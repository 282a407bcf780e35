package storetest

import (
	"testing"

	"github.com/dreamgate/dreamgate/store"
)

// RunPosts runs the post record's contract against an engine: a key is
// posted once recorded, for every handle of the engine (reopen: another
// process where the engine is shared).
func RunPosts(t *testing.T, open func(t *testing.T) (p store.Posts, reopen func(t *testing.T) store.Posts)) {
	p, reopen := open(t)
	if posted, err := p.Posted("k1"); err != nil || posted {
		t.Fatalf("Posted of a new key: %v %v", posted, err)
	}
	if err := p.Record("k1", "M1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Record("k1", "M2"); err != nil {
		t.Fatalf("recording a key again: %v", err)
	}
	if posted, err := p.Posted("k1"); err != nil || !posted {
		t.Fatalf("Posted of a recorded key: %v %v", posted, err)
	}
	if posted, _ := p.Posted("k2"); posted {
		t.Fatal("another key is Posted")
	}
	if reopen != nil {
		if posted, err := reopen(t).Posted("k1"); err != nil || !posted {
			t.Fatalf("another handle: Posted = %v %v", posted, err)
		}
	}
}
