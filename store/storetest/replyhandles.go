package storetest

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// OpenReplyHandles opens fresh, empty reply handles of the engine under
// test, and reopen another handle on them (a restart, another process).
type OpenReplyHandles func(t *testing.T) (h store.ReplyHandles, reopen func(t *testing.T) store.ReplyHandles)

// RunReplyHandles runs the reply handles' contract against an engine: a
// handle kept is found by every handle of the engine until it expires,
// its uses are counted once across all of them up to a limit, and keeping
// it again starts it afresh.
func RunReplyHandles(t *testing.T, open OpenReplyHandles) {
	h, reopen := open(t)
	now := time.Now()
	if _, _, ok, err := h.Handle("slash:T1", now); err != nil || ok {
		t.Fatalf("Handle of nothing kept: %v %v", ok, err)
	}
	if ok, err := h.Use("slash:T1", 5, now); err != nil || ok {
		t.Fatalf("Use of nothing kept: %v %v", ok, err)
	}
	url := []byte(`{"url":"https://hooks.slack.com/commands/T1/1/abc"}`)
	if err := h.Keep("slash:T1", url, now.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := h.Keep("interaction:I1", []byte("token"), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	other := reopen(t)
	for _, x := range []store.ReplyHandles{h, other} {
		got, uses, ok, err := x.Handle("slash:T1", now)
		if err != nil || !ok || uses != 0 || !bytes.Equal(got, url) {
			t.Fatalf("Handle = %q %d %v %v", got, uses, ok, err)
		}
	}
	// Five uses at most, from any handle, however many try at once.
	var wg sync.WaitGroup
	var booked atomic.Int32
	for i := range 12 {
		x := h
		if i%2 == 1 {
			x = other
		}
		wg.Go(func() {
			if ok, err := x.Use("slash:T1", 5, now); err != nil {
				t.Error(err)
			} else if ok {
				booked.Add(1)
			}
		})
	}
	wg.Wait()
	if booked.Load() != 5 {
		t.Fatalf("%d uses booked of a limit of 5", booked.Load())
	}
	if _, uses, ok, _ := other.Handle("slash:T1", now); !ok || uses != 5 {
		t.Fatalf("uses after the limit: %d %v", uses, ok)
	}
	if ok, _ := h.Use("slash:T1", 6, now); !ok {
		t.Fatal("a use under a higher limit was refused")
	}
	// Expired: not found, not usable, whatever the limit.
	later := now.Add(2 * time.Minute)
	if _, _, ok, _ := other.Handle("interaction:I1", later); ok {
		t.Fatal("an expired handle is found")
	}
	if ok, _ := h.Use("interaction:I1", 100, later); ok {
		t.Fatal("an expired handle was used")
	}
	if _, _, ok, _ := h.Handle("interaction:I1", now); !ok {
		t.Fatal("the handle is gone before it expired")
	}
	// Kept again: afresh.
	if err := other.Keep("slash:T1", []byte("new"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, uses, ok, _ := h.Handle("slash:T1", now); !ok || uses != 0 || string(got) != "new" {
		t.Fatalf("kept again: %q %d %v", got, uses, ok)
	}
}
