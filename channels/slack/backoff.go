package slack

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoffDelay is the wait before retry number n (0-based): min doubled n
// times, capped at max, minus up to a quarter for jitter so that many
// clients do not retry in step. It never exceeds max.
func backoffDelay(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if q := int64(d / 4); q > 0 {
		d -= time.Duration(rand.Int64N(q))
	}
	return d
}

// sleepCtx waits for d or until ctx ends, whichever comes first.
func sleepCtx(ctx context.Context, d time.Duration) error {
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
