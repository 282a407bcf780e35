package dream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dreamgate/dreamgate/history"
)

// Defaults of a Retention.
const (
	DefaultRetainAge   = 30 * 24 * time.Hour
	DefaultRetainEvery = 6 * time.Hour
)

// Retention keeps memory/history.jsonl (and the history store's cache of
// unread entries) bounded while Dream is off: nothing then moves the Dream
// cursor, and compaction never drops an unread entry. When more than
// MaxEntries unread entries wait, it retires the oldest of them that are
// older than MaxAge — just enough to come back to MaxEntries — by moving the
// Dream cursor past them, then compacts, and says so in the log. Entries
// younger than MaxAge are never retired, so a history busier than
// MaxEntries in MaxAge keeps that last MaxAge whole. Dream, when turned on
// again, reads what is left.
type Retention struct {
	// Ledger is the workspace's Dream progress (NewLedger), through which
	// the cursor moves; its history is the one kept bounded.
	Ledger *Ledger
	// MaxEntries is the history size above which entries are retired (1000,
	// as Dream compacts); MaxAge the age an entry must have (30 days).
	MaxEntries int
	MaxAge     time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

func (r Retention) withDefaults() Retention {
	if r.MaxEntries <= 0 {
		r.MaxEntries = DefaultMaxEntries
	}
	if r.MaxAge <= 0 {
		r.MaxAge = DefaultRetainAge
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// Pass retires and compacts once. retired counts the unread entries given
// up, dropped the entries removed from the file. It takes the Dream lock
// to move the cursor; while a Dream holds it (a `dreamgate dream run`),
// the pass does nothing: that Dream reads the history and compacts it.
func (r Retention) Pass() (retired, dropped int, err error) {
	r = r.withDefaults()
	h, err := r.Ledger.begin(r.Now())
	var busy *BusyError
	switch {
	case errors.As(err, &busy):
		return 0, 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("retain history: %w", err)
	}
	retired, err = r.retire(h)
	h.end()
	if err != nil {
		return 0, 0, fmt.Errorf("retain history: %w", err)
	}
	dropped, err = r.Ledger.hist.Compact(r.MaxEntries)
	if err != nil {
		return retired, 0, fmt.Errorf("retain history: %w", err)
	}
	if dropped > 0 {
		r.Logger.Info("history compacted", "dropped", dropped)
	}
	return retired, dropped, nil
}

// retire moves the cursor of every scope past the oldest unread entries
// beyond MaxEntries that are older than MaxAge, whatever their scope: the
// frontier moves, and the history with it.
func (r Retention) retire(h *held) (retired int, err error) {
	cursor := h.rec.Frontier
	unread, err := r.Ledger.hist.Since(cursor, 0)
	if err != nil {
		return 0, err
	}
	excess := len(unread) - r.MaxEntries
	cutoff := r.Now().Add(-r.MaxAge)
	to := cursor
	for _, e := range unread {
		if retired >= excess || !olderThan(e, cutoff) {
			break
		}
		to = e.Cursor
		retired++
	}
	if retired == 0 {
		return 0, nil
	}
	if err := h.retired(unread[retired:], to); err != nil {
		return 0, err
	}
	r.Logger.Warn("Dream is off: history entries older than the retention age were retired unread to keep the history bounded",
		"retired", retired, "first", unread[0].Cursor, "last", to, "max_entries", r.MaxEntries, "max_age", r.MaxAge)
	return retired, nil
}

// olderThan reports whether an entry was written before cutoff. A timestamp
// that cannot be read counts as old: it sits before newer entries anyway.
func olderThan(e history.Entry, cutoff time.Time) bool {
	t, err := time.ParseInLocation(history.TimestampLayout, e.Timestamp, cutoff.Location())
	return err != nil || t.Before(cutoff)
}

// Run makes a Pass now and then every interval (DefaultRetainEvery when
// zero) until ctx ends. Errors are logged; the next pass tries again.
func (r Retention) Run(ctx context.Context, every time.Duration) {
	r = r.withDefaults()
	if every <= 0 {
		every = DefaultRetainEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, _, err := r.Pass(); err != nil {
			r.Logger.Warn("history retention failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
