package dream

import (
	"fmt"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Status reports the running and next Dream and, for the scopes chosen,
// each one's last run, skips, backlog and cursor, and their sum. It reads
// the ledger and the history's table of unread entries, no content.
func (d *Dreamer) Status(scopes Scopes) Status {
	var s Status
	s.Since, s.Running = d.ledger.lock.runningSince()
	ld, err := d.ledger.read()
	if err != nil {
		d.log.Warn("dream progress unreadable", "err", err)
	}
	rec := &ld.rec
	bl, _, err := d.ledger.backlogs(rec)
	if err != nil {
		d.log.Warn("dream could not count the unread history", "err", err)
	}
	waiting := map[audience.Scope]int{}
	for _, b := range bl {
		waiting[b.Scope] = b.Count
	}
	names := make([]audience.Scope, 0, len(rec.Scopes)+len(bl))
	for name := range rec.Scopes {
		names = append(names, name)
	}
	for _, b := range bl {
		if _, ok := rec.Scopes[b.Scope]; !ok {
			names = append(names, b.Scope)
		}
	}
	slices.Sort(names)
	asked := d.ledger.DeepRequested()
	first := true
	for _, name := range names {
		if !scopes.Has(name) {
			continue
		}
		p := rec.scope(name)
		sc := ScopeStatus{Scope: name, Last: p.LastRun, Skips: p.Skips, Backlog: waiting[name], Cursor: p.Cursor,
			LastDeep: p.LastDeep, DeepAsked: slices.Contains(asked, name)}
		s.Scopes = append(s.Scopes, sc)
		if sc.LastDeep != nil && (s.LastDeep == nil || sc.LastDeep.After(*s.LastDeep)) {
			s.LastDeep = sc.LastDeep
		}
		if sc.DeepAsked {
			s.DeepAsked = append(s.DeepAsked, name)
		}
		s.Backlog += sc.Backlog
		s.Skips = append(s.Skips, sc.Skips...)
		if first || sc.Cursor < s.Cursor {
			s.Cursor = sc.Cursor
		}
		first = false
	}
	if first {
		s.Cursor = rec.Frontier
	}
	slices.SortStableFunc(s.Skips, func(a, b Skip) int { return a.When.Compare(b.When) })
	s.Last = lastOfScopes(s.Scopes)
	d.mu.Lock()
	next := d.next
	d.mu.Unlock()
	if next != nil {
		s.Next = next()
	}
	return s
}

// lastOfScopes is the most recent run among the scopes' last runs, its
// counts summed over the scopes it was about, its outcome the worst among
// them (a failure is told before a success), its commit the last one
// named.
func lastOfScopes(scopes []ScopeStatus) *LastRun {
	var latest time.Time
	for _, sc := range scopes {
		if sc.Last != nil && sc.Last.When.After(latest) {
			latest = sc.Last.When
		}
	}
	var out *LastRun
	for _, sc := range scopes {
		l := sc.Last
		if l == nil || !l.When.Equal(latest) {
			continue
		}
		if out == nil {
			c := *l
			out = &c
			continue
		}
		if severity(l.Outcome) > severity(out.Outcome) {
			out.Outcome, out.Reason, out.PublicReason = l.Outcome, l.Reason, l.PublicReason
		}
		if out.First == 0 || (l.First > 0 && l.First < out.First) {
			out.First = l.First
		}
		out.Last = max(out.Last, l.Last)
		out.Entries += l.Entries
		out.Changes += l.Changes
		out.Batches += l.Batches
		out.Backlog += l.Backlog
		out.Left += l.Left
		if l.Commit != "" {
			out.Commit, out.UndoneBy = l.Commit, l.UndoneBy
		}
	}
	return out
}

// severity orders outcomes by how much they need to be told.
func severity(o Outcome) int {
	switch o {
	case OutcomeFailed:
		return 4
	case OutcomeSkipped:
		return 3
	case OutcomePartial:
		return 2
	case OutcomeCompleted:
		return 1
	}
	return 0
}

func (d *Dreamer) setNext(f func() time.Time) {
	d.mu.Lock()
	d.next = f
	d.mu.Unlock()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
