package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// RunDreamLedger runs the Dream ledger's contract against an engine:
// open gives a fresh ledger; reopen another process's handle on it.
func RunDreamLedger(t *testing.T, open func(t *testing.T) (l store.DreamLedger, reopen func(t *testing.T) store.DreamLedger)) {
	l, reopen := open(t)
	if _, ok, err := l.Record(); ok || err != nil {
		t.Fatalf("Record of a new ledger: %v %v", ok, err)
	}
	unlock, err := l.LockRecord()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PutRecord([]byte(`{"version":2,"frontier":7}`)); err != nil {
		t.Fatal(err)
	}
	unlock()
	if rec, ok, err := reopen(t).Record(); err != nil || !ok || string(rec) != `{"version":2,"frontier":7}` {
		t.Fatalf("Record through another handle = %q %v %v", rec, ok, err)
	}

	// The Dream lock: one holder across handles, the others told since
	// when; free again once released.
	start := time.Now().Truncate(time.Millisecond)
	release, ok, _, err := l.TryDream(start)
	if err != nil || !ok {
		t.Fatalf("TryDream = %v %v", ok, err)
	}
	other := reopen(t)
	if r, ok, since, err := other.TryDream(start.Add(time.Second)); err != nil || ok || !since.Equal(start) {
		if r != nil {
			r()
		}
		t.Fatalf("a second holder: ok %v since %v (want %v) %v", ok, since, start, err)
	}
	release()
	r2, ok, _, err := other.TryDream(start.Add(2 * time.Second))
	if err != nil || !ok {
		t.Fatalf("TryDream after the release = %v %v", ok, err)
	}
	r2()

	// The record lock serialises read-change-write across handles.
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside, most := 0, 0
	for i := range 4 {
		h := l
		if i%2 == 1 {
			h = reopen(t)
		}
		wg.Go(func() {
			unlock, err := h.LockRecord()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			_, _, _ = h.Record()
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d holders of the record lock at once", most)
	}
}
