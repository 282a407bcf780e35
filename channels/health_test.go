package channels

import (
	"slices"
	"testing"
)

// A watcher sees each change once, in order; a new detail is not a new
// state, so Since stays.
func TestHealthTracker(t *testing.T) {
	h := NewHealthTracker()
	if got := h.Health(); got.State != StateStopped || got.Since.IsZero() {
		t.Fatalf("new tracker = %+v", got)
	}
	var seen []Health
	h.Watch(func(hl Health) { seen = append(seen, hl) })
	h.Set(StateConnecting, "")
	h.Set(StateConnecting, "")
	h.Set(StateConnecting, "auth.test failed")
	h.Set(StateConnected, "")
	var states []string
	for _, s := range seen {
		states = append(states, s.State+"/"+s.Detail)
	}
	if want := []string{"connecting/", "connecting/auth.test failed", "connected/"}; !slices.Equal(states, want) {
		t.Fatalf("watcher saw %q, want %q", states, want)
	}
	if !seen[1].Since.Equal(seen[0].Since) {
		t.Errorf("a new detail moved Since: %v -> %v", seen[0].Since, seen[1].Since)
	}
	if got := h.Health(); got != seen[2] {
		t.Errorf("Health = %+v, want the last change %+v", got, seen[2])
	}
}

// Reconnects count returns to connected after the first connection, not
// the first one nor a new detail; rate-limit waits count without touching
// the state.
func TestHealthTrackerCounts(t *testing.T) {
	h := NewHealthTracker()
	h.Set(StateConnecting, "")
	h.Set(StateConnected, "")
	h.Set(StateConnected, "still")
	if got := h.Health(); got.Reconnects != 0 {
		t.Fatalf("first connection counted as a reconnect: %+v", got)
	}
	h.Set(StateReconnecting, "connection lost")
	h.Set(StateConnected, "")
	h.Set(StateReconnecting, "reconnecting in 1s")
	h.Set(StateReconnecting, "reconnecting in 2s")
	h.Set(StateConnected, "")
	h.RateLimitWait()
	h.RateLimitWait()
	got := h.Health()
	if got.Reconnects != 2 || got.RateLimitWaits != 2 || got.State != StateConnected {
		t.Errorf("health = %+v, want 2 reconnects, 2 rate-limit waits, connected", got)
	}
}
