package llm

import (
	"context"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// SetClock replaces the clock the record of failures and Retry-After
// dates use.
func SetClock(c *Client, now func() time.Time) { c.now = now }

// SetFakeClock puts the client wholly on clk: its time, and the timers
// that bound a try and the wait for a first byte.
func SetFakeClock(c *Client, clk *testkit.Clock) {
	c.now = clk.Now
	c.afterFunc = func(d time.Duration, f func()) timer { return clk.AfterFunc(d, f) }
}

// SetWait replaces the wait between tries.
func SetWait(c *Client, wait func(ctx context.Context, d time.Duration) error) { c.wait = wait }

var (
	ParseRetryAfter  = parseRetryAfter
	FillEmptyContent = func(body []byte) ([]byte, error) { return bodyMend{fillContent: true}.body(body) }
)
