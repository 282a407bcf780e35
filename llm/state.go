package llm

import (
	"errors"
	"time"
)

// Error classes reported by State.LastErrorClass.
const (
	ClassUnavailable = "unavailable"
	ClassRejected    = "rejected"
	ClassMalformed   = "malformed"
)

// State is what the client last learned about its endpoint from chat calls,
// for health reports. It holds no message text, key or provider body.
type State struct {
	// Known is false until a chat call has reached an end (calls abandoned
	// by their caller say nothing).
	Known bool
	// Reachable: the last finished call got an answer from the endpoint
	// (a success, a rejection or an unreadable body).
	Reachable bool
	// BreakerOpen: calls are failing fast (a half-open trial counts as open).
	BreakerOpen bool
	// LastErrorClass is the class of the most recent failed call, one of
	// the Class constants, or "" when no call has failed yet.
	LastErrorClass string
	// LastErrorAt is when that call failed.
	LastErrorAt time.Time
	// LastCallAt is when the most recent call finished.
	LastCallAt time.Time
}

// State returns a snapshot of the endpoint's last known state.
func (c *Client) State() State {
	c.mu.Lock()
	s := c.state
	c.mu.Unlock()
	s.BreakerOpen = c.rec.isOpen()
	return s
}

// observe records how a call ended; abandoned calls are not recorded.
func (c *Client) observe(o outcome, err error, now time.Time) {
	if o == outcomeAbandoned {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.Known = true
	c.state.LastCallAt = now
	c.state.Reachable = o == outcomeReached
	if err == nil {
		return
	}
	c.state.LastErrorAt = now
	switch {
	case errors.Is(err, ErrUnavailable):
		c.state.LastErrorClass = ClassUnavailable
	case errors.Is(err, ErrRejected):
		c.state.LastErrorClass = ClassRejected
	default:
		c.state.LastErrorClass = ClassMalformed
	}
}
