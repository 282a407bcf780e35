package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// maxCooldown caps how long a failing model is passed over: a provider down
// for hours is tried again every ten minutes.
const maxCooldown = 10 * time.Minute

// record is the one account of whether a model serves, kept by its Client
// and read by every chain that lists it: the calls that failed in a row,
// and until when it is passed over.
//
// A call that failed in a way that says the model cannot serve (see
// verdictOf) starts a cooldown of Config.BreakerCooldown, doubled at each
// cooldown in a row up to ten minutes; a call that was under way when the
// cooldown began does not lengthen it, a failed trial does. While it cools
// down a chain passes the model over for another; after it, one call (the
// trial) tries it, and its success ends the record. A call that has no
// other model to go to (a chain whose every model cools down, or the
// Client called alone) still tries it, unless Config.BreakerThreshold
// calls in a row have failed: then it fails fast until the cooldown ends
// (the breaker is open).
type record struct {
	threshold int
	cooldown  time.Duration

	mu       sync.Mutex
	failures int       // calls in a row that failed
	cools    int       // cooldowns in a row, for the doubling
	until    time.Time // while failures > 0: when the cooldown ends
	trial    bool      // a call is trying the model after its cooldown
	last     error     // the last failure, for the fast one and the reason
}

func newRecord(threshold int, cooldown time.Duration) *record {
	return &record{threshold: threshold, cooldown: cooldown}
}

// available reports whether a call that could go to another model should
// try this one now: it has not failed, or its cooldown is over and no
// other call is trying it (trial: this call is the one that does).
func (r *record) available(now time.Time) (ok, trial bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.failures == 0:
		return true, false
	case now.Before(r.until) || r.trial:
		return false, false
	}
	r.trial = true
	return true, true
}

// force lets a call that has no other model to go to try this one, unless
// the breaker is open: then err is the fast failure. trial: this call
// holds the trial.
func (r *record) force(now time.Time) (trial bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.failures == 0:
		return false, nil
	case r.failures >= r.threshold && now.Before(r.until):
		return false, r.fastError(fmt.Sprintf("too many failures in a row; next try in %s", ceilSeconds(r.until.Sub(now))))
	case r.failures >= r.threshold && r.trial:
		return false, r.fastError("too many failures in a row; a trial call is under way")
	case r.trial || now.Before(r.until):
		return false, nil
	}
	r.trial = true
	return true, nil
}

// fastError is the last failure as it was (its kind and status, so the
// sentence users read still names what to fix), with why the call was
// not sent. r.mu is held.
func (r *record) fastError(why string) *Error {
	e := &Error{Kind: ErrUnavailable}
	var last *Error
	if errors.As(r.last, &last) {
		c := *last
		e = &c
	}
	if e.Reason != "" {
		e.Reason += " (" + why + ")"
	} else {
		e.Reason = why
	}
	e.Err = fmt.Errorf("not sent, %d failed calls in a row: %w", r.failures, r.last)
	return e
}

// outcome of a call for the record.
type coolOutcome int

const (
	coolServed  coolOutcome = iota // it answered (a refusal of the request, not of the model, too)
	coolFailed                     // it cannot serve: cool it down
	coolNeutral                    // says nothing of the model: the caller gave up
)

func coolOutcomeOf(ctx context.Context, err error) coolOutcome {
	switch {
	case err == nil:
		return coolServed
	case ctx.Err() != nil:
		return coolNeutral
	case verdictOf(err).cool:
		return coolFailed
	case errors.Is(err, ErrRejected):
		// A prompt too long for it, a request it calls malformed: the
		// model serves, this request is the problem.
		return coolServed
	}
	return coolNeutral
}

// transition is a change of the record worth a log line.
type transition int

const (
	recordSame   transition = iota
	recordOpened            // the breaker opened: calls with nowhere else to go fail fast
	recordClosed            // it answered with the breaker open
)

// done records how a call that available or force let through ended.
func (r *record) done(trial bool, o coolOutcome, err error, now time.Time) transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	if trial {
		r.trial = false
	}
	switch o {
	case coolServed:
		wasOpen := r.failures >= r.threshold
		r.failures, r.cools, r.until, r.last = 0, 0, time.Time{}, nil
		if wasOpen {
			return recordClosed
		}
	case coolFailed:
		r.failures++
		r.last = err
		if trial || !now.Before(r.until) {
			r.cools++
			r.until = now.Add(backoff.Delay(r.cools-1, r.cooldown, max(maxCooldown, r.cooldown)))
		}
		if r.failures == r.threshold {
			return recordOpened
		}
	}
	return recordSame
}

// cooling reports whether chains pass the model over now.
func (r *record) cooling(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures > 0 && (now.Before(r.until) || r.trial)
}

// status is when a model that failed is tried again and why it failed;
// zero and "" when it did not.
func (r *record) status() (until time.Time, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == 0 {
		return time.Time{}, ""
	}
	return r.until, reasonOf(r.last)
}

// isOpen reports whether a call with nowhere else to go fails fast or is
// the one trying the model.
func (r *record) isOpen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures >= r.threshold
}

// outcome is what a finished call tells the endpoint's State.
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

// ceilSeconds formats d rounded up to whole seconds ("25s").
func ceilSeconds(d time.Duration) string {
	s := (d + time.Second - 1) / time.Second
	return fmt.Sprintf("%ds", s)
}
