package testkit

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects what other goroutines write (a text log, a process's
// stderr, a terminal's output) while the test reads it, and can be waited
// on for a piece of text. The zero value is ready.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

// waitLimit bounds WaitFor: far above any healthy wait, so that only a
// hang reaches it.
const waitLimit = 20 * time.Second

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor returns once what has been written contains what, and fails the
// test if that takes longer than 20 seconds.
func (b *Buffer) WaitFor(t testing.TB, what string) {
	t.Helper()
	b.WaitForCount(t, what, 1)
}

// WaitForCount returns once what has been written contains what n times
// (not overlapping), and fails the test if that takes longer than 20
// seconds.
func (b *Buffer) WaitForCount(t testing.TB, what string, n int) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		has := strings.Count(b.buf.String(), what) >= n
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waited %s for %q (%d times); got:\n%s", waitLimit, what, n, b.String())
		}
	}
}
