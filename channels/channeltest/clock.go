package channeltest

import (
	"context"
	"sync"
	"time"
)

// Clock is a channels.Clock for tests of the send retries: Sleep moves its
// time on by d and returns at once, so a test scripts a rate-limit storm of
// minutes without waiting for it. Hold makes the next sleep wait, so a test
// can act while a sender is known to be waiting.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	slept  time.Duration
	sleeps int
	hold   chan struct{} // non-nil: the next Sleep waits for it
	held   chan struct{} // closed when a Sleep waits on hold
}

// NewClock starts at a fixed time.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the time on by d; a held sleep first waits for the release.
// It returns ctx.Err() when ctx ends first.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	hold, held := c.hold, c.held
	c.hold, c.held = nil, nil
	c.mu.Unlock()
	if hold != nil {
		close(held)
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	c.slept += max(d, 0)
	c.sleeps++
	return nil
}

// Hold makes the next Sleep wait until release is called (or its context
// ends); waiting is closed once that Sleep has begun to wait.
func (c *Clock) Hold() (waiting <-chan struct{}, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hold, held := make(chan struct{}), make(chan struct{})
	c.hold, c.held = hold, held
	return held, sync.OnceFunc(func() { close(hold) })
}

// Slept reports the sleeps so far and their total length.
func (c *Clock) Slept() (n int, total time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleeps, c.slept
}
