package dream

import (
	"fmt"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
)

// The ledger's transitions: every change of the record has a name here,
// as a method of the held ledger (the Dream lock's holder) or of the
// Ledger (RequestDeep, which only takes the record lock). Each is one
// write of the record, made under the record lock on the record as it is
// on disk (update).

// follow makes the record agree with memory/.dream_cursor holding cursor,
// and reports whether it had to. A frontier moved forward means those
// entries are consumed in every scope; moved back, that they are to be read
// again. Failures and findings left for a batch the cursor has passed are
// dropped: that batch is done.
func (r *record) follow(cursor int) bool {
	moved := cursor != r.Frontier
	for _, p := range r.Scopes {
		if moved {
			if cursor > r.Frontier {
				p.Cursor = max(p.Cursor, cursor)
			} else {
				p.Cursor = min(p.Cursor, cursor)
			}
		}
		if p.Failures != nil && p.Failures.First <= p.Cursor {
			p.Failures = nil
		}
		if p.Pending != nil && p.Pending.First <= p.Cursor {
			p.Pending = nil
		}
	}
	r.Frontier = cursor
	return moved
}

// settle records the scopes with unread entries (bl) the record did not
// know yet, at the frontier, and moves every other scope's cursor up to
// last, the end of the history when bl was read: a quiet scope never holds
// the frontier back.
func (h *held) settle(bl []history.Backlog, last int) error {
	return h.update(func(r *record) {
		waiting := map[audience.Scope]bool{}
		for _, b := range bl {
			r.scope(b.Scope)
			waiting[b.Scope] = true
		}
		for name, p := range r.Scopes {
			if !waiting[name] && p.Cursor < last {
				p.Cursor = last
			}
		}
	})
}

// ranLast records each scope's part of the run that ended.
func (h *held) ranLast(runs map[audience.Scope]*LastRun) error {
	return h.update(func(r *record) {
		for name, last := range runs {
			r.scope(name).LastRun = last
		}
	})
}

// dropPending forgets the findings left for a batch the scope no longer
// reads next.
func (h *held) dropPending(scope audience.Scope) error {
	return h.update(func(r *record) { r.scope(scope).Pending = nil })
}

// batchFailed counts a failure of the scope's next batch.
func (h *held) batchFailed(scope audience.Scope, f batchFailures) error {
	return h.update(func(r *record) { r.scope(scope).Failures = &f })
}

// skipped gives up on a batch: the cursor moves to to, past it, and the
// skip is kept (the newest maxSkipsKept).
func (h *held) skipped(scope audience.Scope, to int, s Skip) error {
	return h.update(func(r *record) {
		p := r.scope(scope)
		p.Cursor, p.Failures, p.Pending = to, nil, nil
		p.Skips = append(p.Skips, s)
		if n := len(p.Skips); n > maxSkipsKept {
			p.Skips = slices.Clone(p.Skips[n-maxSkipsKept:])
		}
	})
}

// batchDone moves the scope past a batch that needed no commit (nothing
// to keep, or every fact already in the files).
func (h *held) batchDone(scope audience.Scope, last int) error {
	return h.update(func(r *record) { r.batchDone(scope, last) })
}

func (r *record) batchDone(scope audience.Scope, last int) {
	p := r.scope(scope)
	p.Cursor, p.Failures, p.Pending = max(p.Cursor, last), nil, nil
}

// batchLeft records the findings a stopped batch left, when it committed
// nothing: the next run applies them without a new analysis.
func (h *held) batchLeft(scope audience.Scope, left pendingFindings) error {
	return h.update(func(r *record) {
		p := r.scope(scope)
		p.Pending, p.Failures = &left, nil
	})
}

// landed takes in steps that happened (their commits, oldest first), as
// their notes say, and records head as the commit whose step the ledger
// took in last. The same transition runs after a step's files are written
// and at a start that finds a step a kill interrupted: what a step does to
// the ledger is known from its commit alone.
func (h *held) landed(notes []stepNote, head string, when time.Time) error {
	return h.update(func(r *record) {
		for _, n := range notes {
			r.took(n, when)
		}
		r.Head = head
	})
}

// took applies one step's note.
func (r *record) took(n stepNote, when time.Time) {
	switch n.Kind {
	case stepBatch:
		if n.Done {
			r.batchDone(n.Scope, n.Last)
			return
		}
		p := r.scope(n.Scope)
		if p.Cursor >= n.Last {
			return // the batch is behind the cursor already
		}
		p.Pending = &pendingFindings{First: n.First, Last: n.Last, Total: n.Total, Findings: slices.Clone(n.Left)}
		p.Failures = nil
	case stepDeep:
		p := r.scope(n.Scope)
		p.SinceDeep, p.LastDeep, p.DeepLeft, p.DeepAsked = 0, &when, n.DeepLeft, false
		if r.DeepWriting != nil && r.DeepWriting.Scope == n.Scope {
			r.DeepWriting = nil
		}
	case stepRestore:
		r.restored(n)
	}
}

// countDreams adds a Dream to each scope's count towards its next deep
// Dream.
func (h *held) countDreams(scopes []audience.Scope) error {
	return h.update(func(r *record) {
		for _, s := range scopes {
			r.scope(s).SinceDeep++
		}
	})
}

// deepAnswered drops a prompt's request for a deep Dream that the last one
// answered already (the memory did not grow past what it left).
func (h *held) deepAnswered(scope audience.Scope) error {
	return h.update(func(r *record) { r.scope(scope).DeepAsked = false })
}

// retired moves every scope past the entries up to to (the retention while
// Dream is off); the scopes of the entries kept (keep) are recorded first,
// so the frontier cannot pass them.
func (h *held) retired(keep []history.Entry, to int) error {
	return h.update(func(r *record) {
		for _, e := range keep {
			r.scope(e.Scope)
		}
		for _, p := range r.Scopes {
			p.Cursor = max(p.Cursor, to)
		}
	})
}

// undone marks the scopes' last runs whose commit a restore undid
// (undid reports it) as undone by the restore's commit.
func (h *held) undone(undid func(short string) bool, by string) error {
	return h.update(func(r *record) {
		for _, p := range r.Scopes {
			if p.LastRun != nil && p.LastRun.Commit != "" && undid(p.LastRun.Commit) {
				p.LastRun.UndoneBy = by
			}
		}
	})
}

// RequestDeep asks for a deep Dream of the scope at the next Dream
// (gateway.DeepDreams), in the ledger: a restart does not forget it. It
// takes the record lock alone, so asking never waits for a running Dream,
// only for a write of the record.
func (l *Ledger) RequestDeep(scope audience.Scope) error {
	if _, err := audience.ParseScope(string(scope)); err != nil {
		return fmt.Errorf("deep Dream request: %w", err)
	}
	if p, err := l.progressOf(scope); err == nil && p.DeepAsked {
		return nil // asked already: no write
	}
	if _, err := l.update(func(r *record) { r.scope(scope).DeepAsked = true }); err != nil {
		return fmt.Errorf("deep Dream request: %w", err)
	}
	return nil
}

// DeepRequested lists the scopes waiting for a deep Dream.
func (l *Ledger) DeepRequested() []audience.Scope {
	ld, err := l.read()
	if err != nil {
		l.log.Warn("deep Dream requests unreadable", "err", err)
	}
	return ld.rec.deepAsked()
}

func (r *record) deepAsked() []audience.Scope {
	var out []audience.Scope
	for name, p := range r.Scopes {
		if p.DeepAsked {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
