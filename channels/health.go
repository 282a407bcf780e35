package channels

import (
	"sync"
	"time"
)

// HealthTracker holds the Health an adapter reports; Set is called from its
// connection loop, Health from /healthz. It is safe for concurrent use.
type HealthTracker struct {
	mu        sync.Mutex
	h         Health
	watch     func(Health)
	connected bool // StateConnected was reached once: the next return is a reconnect
}

// NewHealthTracker starts in StateStopped, "not started".
func NewHealthTracker() *HealthTracker {
	return &HealthTracker{h: Health{State: StateStopped, Detail: "not started", Since: time.Now()}}
}

// Health returns the current state.
func (t *HealthTracker) Health() Health {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h
}

// Set records state and detail. Since moves only when the state changes:
// a new detail ("reconnecting in 2s") is not a new state.
func (t *HealthTracker) Set(state, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h.State == state && t.h.Detail == detail {
		return
	}
	if t.h.State != state {
		t.h.Since = time.Now()
		if state == StateConnected {
			if t.connected {
				t.h.Reconnects++
			}
			t.connected = true
		}
	}
	t.h.State, t.h.Detail = state, detail
	if t.watch != nil {
		t.watch(t.h) // under the lock, so a watcher sees the changes in order
	}
}

// Watch makes f see every later change, in order (tests). f must not block
// or call back into the tracker.
func (t *HealthTracker) Watch(f func(Health)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watch = f
}

// RateLimitWait counts one rate-limit answer the adapter is about to wait
// out. It does not change the state: a wait is not a lost connection.
func (t *HealthTracker) RateLimitWait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.h.RateLimitWaits++
}
