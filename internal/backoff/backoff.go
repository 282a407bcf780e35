// Package backoff is the one wait-and-retry helper of dreamgate: the
// doubling delay with its cap, the jitter that keeps many clients from
// retrying in step, and a sleep that ends with its context.
//
// It is a leaf: it imports nothing of ours, so any layer may use it.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry number n (0-based): base doubled n times,
// capped at max. It is exact; Jitter spreads it.
func Delay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Jitter takes up to a quarter off d at random, so that many clients
// waiting the same Delay do not retry in step; it never lengthens d, so a
// capped delay stays within its cap.
func Jitter(d time.Duration) time.Duration {
	if q := int64(d / 4); q > 0 {
		d -= time.Duration(rand.Int64N(q))
	}
	return d
}

// Sleep waits d or until ctx ends, whichever comes first; it returns
// ctx.Err() when ctx ended first (also for d <= 0 on a done ctx).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
