package llm

import (
	"context"
	"time"
)

// SetClock replaces the clock the breaker and Retry-After dates use.
func SetClock(c *Client, now func() time.Time) { c.now = now }

// SetWait replaces the wait between tries.
func SetWait(c *Client, wait func(ctx context.Context, d time.Duration) error) { c.wait = wait }

var (
	ParseRetryAfter  = parseRetryAfter
	FillEmptyContent = func(body []byte) ([]byte, error) { return bodyMend{fillContent: true}.body(body) }
)
