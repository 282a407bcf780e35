package testkit

import (
	"slices"
	"sync"
	"time"
)

// Clock is a settable time source to inject where code takes a
// func() time.Time, and its timers where code takes an AfterFunc: it
// stands still until the test moves it, so no test waits on the wall
// clock. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*Timer // armed, in no order
}

// NewClock returns a Clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d on, and runs the function of every timer that
// comes due, earliest first, on the calling goroutine (with no lock held,
// so it may use the clock).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	var due []*Timer
	c.timers = slices.DeleteFunc(c.timers, func(tm *Timer) bool {
		if tm.at.After(c.t) {
			return false
		}
		due = append(due, tm)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *Timer) int { return a.at.Compare(b.at) })
	for _, tm := range due {
		tm.f()
	}
}

// Armed is the number of timers waiting to fire.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Timer is time.AfterFunc's timer on a Clock: f runs when Advance moves
// the clock to or past its time.
type Timer struct {
	c  *Clock
	at time.Time
	f  func()
}

// AfterFunc arms a timer that runs f once the clock has moved d on.
func (c *Clock) AfterFunc(d time.Duration, f func()) *Timer {
	tm := &Timer{c: c, f: f}
	tm.Reset(d)
	return tm
}

// Stop disarms the timer; it reports whether it was armed.
func (tm *Timer) Stop() bool {
	c := tm.c
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.timers)
	c.timers = slices.DeleteFunc(c.timers, func(x *Timer) bool { return x == tm })
	return len(c.timers) < n
}

// Reset arms the timer to fire d from the clock's time now; it reports
// whether it was armed before.
func (tm *Timer) Reset(d time.Duration) bool {
	was := tm.Stop()
	c := tm.c
	c.mu.Lock()
	tm.at = c.t.Add(d)
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	return was
}
