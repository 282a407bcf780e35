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
