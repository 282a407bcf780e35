package slack

import (
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// The health that /metrics reads counts each 429 waited out and each
// return to connected after a dropped connection.
func TestHealthCountsRateLimitWaitsAndReconnects(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	h.fake.RateLimitNextPost(time.Second)
	if err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C1", Text: "after the limit"}); err != nil {
		t.Fatal(err)
	}
	if got := h.a.Health(); got.RateLimitWaits != 1 || got.Reconnects != 0 {
		t.Fatalf("health = %+v, want 1 rate-limit wait and no reconnect", got)
	}

	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	h.waitHealth(channels.StateReconnecting)
	if got := h.waitHealth(channels.StateConnected); got.Reconnects != 1 || got.RateLimitWaits != 1 {
		t.Errorf("health after the reconnect = %+v, want 1 reconnect, 1 rate-limit wait", got)
	}
}
