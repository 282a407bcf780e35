package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// DefaultSendRetry is how long a chat adapter keeps retrying a message that
// meets rate limits or server errors before it drops it.
const DefaultSendRetry = 5 * time.Minute

// ErrDropped is wrapped by the error of a Send that gave up because its
// retry window ended. The adapter has already logged the drop (one ERROR
// line naming the session, kind, length and how long it tried), so the
// caller need not log it again.
var ErrDropped = errors.New("message dropped: still failing when its retry window ended")

// Clock is the time a SendRetry waits in; tests inject one that need not
// wait for real.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends; it returns ctx.Err() when ctx ended
	// first.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time                                   { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error { return backoff.Sleep(ctx, d) }

// SendWait describes one wait before a send is tried again.
type SendWait struct {
	Channel, SessionKey string
	RateLimited         bool          // the platform answered 429 (else a 5xx or network failure)
	Delay               time.Duration // how long this wait is
	Attempt             int           // failed attempts so far, this one included
}

// SendRetry is the one retry policy of the chat adapters' sends: a message
// whose attempts meet rate limits (waited out for the platform's
// retry-after) or transient failures (a doubling backoff) is tried again
// until Window has passed since its first attempt, and only then dropped,
// with one ERROR line. Each message gets its own Retry (Start), shared by
// its split parts, so the window bounds the whole message. The caller
// sends one conversation's messages one at a time, so a message that waits
// holds the later ones of its conversation behind it, in order; other
// conversations go on with Retries of their own.
//
// The zero value is usable: a 5-minute window, 1 s doubling to 30 s, real
// time, no log.
type SendRetry struct {
	// Window bounds the retries of one message, from its first attempt;
	// 0 means DefaultSendRetry.
	Window time.Duration
	// Base and Max bound the backoff after a failure the platform gave no
	// retry-after for; 0 means 1 s and 30 s.
	Base, Max time.Duration
	// Clock is nil for real time.
	Clock Clock
	// OnWait, when set, is called before every wait (e.g. to count
	// rate-limit waits). It must not block.
	OnWait func(SendWait)
	Log    *slog.Logger
}

// Retry tracks the attempts of one message. It is not safe for concurrent
// use: one message's parts are sent one after another.
type Retry struct {
	p           SendRetry
	out         Outbound
	start       time.Time
	failures    int // transient failures, for the backoff
	rateLimited int
	dropped     bool
}

// Start begins the retries of out, now.
func (p SendRetry) Start(out Outbound) *Retry {
	if p.Window <= 0 {
		p.Window = DefaultSendRetry
	}
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Clock == nil {
		p.Clock = realClock{}
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	return &Retry{p: p, out: out, start: p.Clock.Now()}
}

// RateLimited is called after the platform refused an attempt with a rate
// limit; retryAfter is its word on when to try again (<= 0: it gave none,
// and the backoff's base is waited). It returns nil once the caller should
// try again. It returns an error wrapping ErrDropped (and err) when the
// window has ended, after logging the drop, or ctx's error when ctx ended
// during the wait. A wait is cut short at the window's end, where one last
// attempt is made.
func (r *Retry) RateLimited(ctx context.Context, retryAfter time.Duration, err error) error {
	r.rateLimited++
	if retryAfter <= 0 {
		retryAfter = r.p.Base
	}
	return r.wait(ctx, retryAfter, true, err)
}

// Failed is called after an attempt failed in a way that may pass (a 5xx,
// a network error, a timeout); it waits the jittered, doubling backoff and
// returns as RateLimited does.
func (r *Retry) Failed(ctx context.Context, err error) error {
	r.failures++
	return r.wait(ctx, backoff.Jitter(backoff.Delay(r.failures-1, r.p.Base, r.p.Max)), false, err)
}

// Expired reports whether the window has ended: the next failure drops the
// message. A caller that cannot tell whether a failed attempt went through
// checks before it reports the failure.
func (r *Retry) Expired() bool { return !r.p.Clock.Now().Before(r.start.Add(r.p.Window)) }

// Attempts reports the failed attempts so far.
func (r *Retry) Attempts() int { return r.failures + r.rateLimited }

func (r *Retry) wait(ctx context.Context, delay time.Duration, limited bool, err error) error {
	if r.dropped {
		return &DroppedError{Tried: r.p.Clock.Now().Sub(r.start), Attempts: r.Attempts(), Last: err}
	}
	now := r.p.Clock.Now()
	end := r.start.Add(r.p.Window)
	if !now.Before(end) {
		return r.drop(now.Sub(r.start), err)
	}
	delay = min(delay, end.Sub(now))
	r.waiting(SendWait{Channel: r.out.Channel, SessionKey: r.out.SessionKey, RateLimited: limited, Delay: delay, Attempt: r.Attempts()})
	if serr := r.p.Clock.Sleep(ctx, delay); serr != nil {
		return fmt.Errorf("%w (while waiting to retry after: %w)", serr, err)
	}
	return nil
}

// waiting is where every wait before a retry is reported: the hook for
// metrics (OnWait: count rate-limit waits here) and the log. A storm can
// mean hundreds of waits for one message, so only its first is logged at
// info.
func (r *Retry) waiting(w SendWait) {
	level := slog.LevelDebug
	if w.Attempt == 1 {
		level = slog.LevelInfo
	}
	if w.RateLimited {
		r.p.Log.Log(context.Background(), level, "rate limited; waiting", "session", w.SessionKey, "retry_after", w.Delay, "attempt", w.Attempt)
	} else {
		r.p.Log.Log(context.Background(), level, "send failed; retrying", "session", w.SessionKey, "in", w.Delay, "attempt", w.Attempt)
	}
	if r.p.OnWait != nil {
		r.p.OnWait(w)
	}
}

// drop logs what was lost, once, without its text.
func (r *Retry) drop(tried time.Duration, err error) error {
	r.dropped = true
	kind := r.out.Kind
	if kind == KindReply {
		kind = "reply"
	}
	r.p.Log.Error("message dropped: still failing when the send retry window ended",
		"session", r.out.SessionKey, "kind", kind, "len", len(r.out.Text),
		"tried", tried.Round(time.Millisecond), "attempts", r.Attempts(), "rate_limited", r.rateLimited, "err", err)
	return &DroppedError{Tried: tried, Attempts: r.Attempts(), Last: err}
}

// DroppedError is the error of a message given up when its retry window
// ended. It wraps ErrDropped and the last attempt's error.
type DroppedError struct {
	Tried    time.Duration // from the first attempt to giving up
	Attempts int           // failed attempts
	Last     error
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("gave up after %s and %d failed attempts: %v", e.Tried.Round(time.Millisecond), e.Attempts, e.Last)
}

func (e *DroppedError) Unwrap() []error { return []error{ErrDropped, e.Last} }
