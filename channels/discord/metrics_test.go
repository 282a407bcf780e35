package discord

import (
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// The health that /metrics reads counts each 429 waited out and each
// return to connected after a dropped connection.
func TestHealthCountsRateLimitWaitsAndReconnects(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.expectState(channels.StateConnected)
	h.fake.Inject429(100*time.Millisecond, false)
	h.send(channels.Outbound{ChatID: "C1", Text: "patience"})
	if got := h.a.Health(); got.RateLimitWaits != 1 || got.Reconnects != 0 {
		t.Fatalf("health = %+v, want 1 rate-limit wait and no reconnect", got)
	}

	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	h.expectState(channels.StateReconnecting)
	if got := h.expectState(channels.StateConnected); got.Reconnects != 1 || got.RateLimitWaits != 1 {
		t.Errorf("health after the reconnect = %+v, want 1 reconnect, 1 rate-limit wait", got)
	}
}
