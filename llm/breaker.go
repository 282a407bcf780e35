package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// outcome is what a finished call tells the breaker.
type outcome int

const (
	// outcomeReached: the endpoint answered (success, rejected, malformed).
	outcomeReached outcome = iota
	// outcomeUnavailable: the call ended in ErrUnavailable.
	outcomeUnavailable
	// outcomeAbandoned: the caller's context ended; says nothing.
	outcomeAbandoned
)

func outcomeOf(ctx context.Context, err error) outcome {
	switch {
	case err == nil:
		return outcomeReached
	case ctx.Err() != nil:
		return outcomeAbandoned
	case errors.Is(err, ErrUnavailable):
		return outcomeUnavailable
	default:
		return outcomeReached
	}
}

// transition is a change of breaker state worth a log line.
type transition int

const (
	breakerSame transition = iota
	breakerOpened
	breakerClosed
)

// breaker fails calls fast after threshold consecutive unavailable calls,
// until cooldown has passed; then one trial call decides (half-open).
type breaker struct {
	threshold int
	cooldown  time.Duration

	mu        sync.Mutex
	failures  int       // consecutive unavailable calls
	openUntil time.Time // when failures >= threshold: end of the cooldown
	trial     bool      // a half-open trial call is under way
	last      error     // the failure that opened it, for logs
}

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown}
}

// allow reports whether a call may go ahead, and whether it is the
// half-open trial. When it may not, the error is the fast failure.
func (b *breaker) allow(now time.Time) (trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < b.threshold {
		return false, nil
	}
	if wait := b.openUntil.Sub(now); wait > 0 {
		return false, b.openError(fmt.Sprintf("too many failures in a row; next try in %s", ceilSeconds(wait)))
	}
	if b.trial {
		return false, b.openError("too many failures in a row; a trial call is under way")
	}
	b.trial = true
	return true, nil
}

func (b *breaker) openError(reason string) *Error {
	// Lead with the cause users can act on ("cannot connect to …"); the
	// last failure's Reason is safe by construction.
	var last *Error
	if errors.As(b.last, &last) && last.Reason != "" {
		reason = last.Reason + " (" + reason + ")"
	}
	return &Error{
		Kind:   ErrUnavailable,
		Reason: reason,
		Err:    fmt.Errorf("breaker open after %d failed calls: %w", b.failures, b.last),
	}
}

// done records how a call that allow let through ended.
func (b *breaker) done(trial bool, o outcome, err error, now time.Time) transition {
	b.mu.Lock()
	defer b.mu.Unlock()
	if trial {
		b.trial = false
	}
	switch o {
	case outcomeReached:
		wasOpen := b.failures >= b.threshold
		b.failures, b.last = 0, nil
		if wasOpen {
			return breakerClosed
		}
	case outcomeUnavailable:
		b.failures++
		b.last = err
		// A concurrent call failing while the breaker is already open must
		// not push the cooldown further; a failed trial re-opens it.
		if b.failures == b.threshold || trial {
			b.openUntil = now.Add(b.cooldown)
			return breakerOpened
		}
	}
	return breakerSame
}

// ceilSeconds formats d rounded up to whole seconds ("25s").
func ceilSeconds(d time.Duration) string {
	s := (d + time.Second - 1) / time.Second
	return fmt.Sprintf("%ds", s)
}
