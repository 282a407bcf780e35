package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// parseLocked parses a line and warns (once per kind) about a bad one.
func (s *Store) parseLocked(line []byte) (Entry, bool) {
	if e, ok := parseCanonical(line); ok {
		return e, true
	}
	e, kind := s.parseSlowLocked(line)
	return e, kind == lineOK
}

func (s *Store) parseSlowLocked(line []byte) (Entry, lineKind) {
	e, kind := parseLine(line)
	if kind != lineOK && kind != lineBlank {
		s.warnLineLocked(kind, len(line))
	}
	return e, kind
}

func (s *Store) warnLineLocked(kind lineKind, n int) {
	s.warnOnce("line:"+kind.String(), "skipping a malformed history.jsonl line (further ones of this kind not logged)",
		"problem", kind.String(), "bytes", n)
}

// peekLocked is parseLocked for the cache, which needs every field of a
// valid entry but its content: a line of the usual shape is only checked,
// any other is parsed. It accepts the same lines and warns the same way.
func (s *Store) peekLocked(line []byte) (Entry, lineKind) {
	if e, ok := scanCanonical(line, s.cache.keys, s.cache.scopes); ok {
		return e, lineOK
	}
	return s.parseSlowLocked(line)
}

// scanLocked reads the whole file, bypassing the cache, for the rare read
// that reaches below the cache's floor. fn returns false to stop.
func (s *Store) scanLocked(fn func(Entry) bool) error {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	n, err := readLines(f, func(line []byte, _ int64) bool {
		if e, ok := s.parseLocked(line); ok {
			return fn(e)
		}
		return true
	})
	s.readBytes += n
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	return nil
}

// Since returns the valid entries with Cursor > cursor, in file order, at
// most limit of them (0 means all).
func (s *Store) Since(cursor, limit int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		out, err = s.selectLocked(cursor, limit, nil)
		return err
	})
	return out, err
}

// Unread returns the entries of one session that Dream has not consumed yet
// (Cursor > the dream cursor), in file order: what a prompt's "Recent
// history" shows.
func (s *Store) Unread(sessionKey string) ([]Entry, error) {
	return s.UnreadLast(sessionKey, 0)
}

// UnreadLast is Unread limited to the session's last n such entries (0
// means all). Its cost depends on the session's unread entries, not on
// other sessions'.
func (s *Store) UnreadLast(sessionKey string, n int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc := s.dreamCursorLocked()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		s.pruneLocked(dc)
		c := &s.cache
		if dc < c.floor {
			// Moved back by hand: what is unread is partly only in the file.
			out, err = s.selectLocked(dc, 0, func(key string, _ audience.Scope, _ int) bool { return key == sessionKey })
			if n > 0 && len(out) > n {
				out = out[len(out)-n:]
			}
			return err
		}
		key, known := c.keys.ids[sessionKey]
		var idx []int
		if known && int(key) < len(c.sessions) {
			idx = c.sessions[key]
		}
		if n > 0 && len(idx) > n {
			idx = idx[len(idx)-n:]
		}
		ms := make([]meta, 0, len(idx))
		for _, i := range idx {
			if c.metas[i].cursor > dc {
				ms = append(ms, c.metas[i])
			}
		}
		if c.lazy != nil && known && (n <= 0 || len(ms) < n) {
			// The rest is in the table not decoded yet: only this
			// session's part of it is.
			g, err := c.lazy.group(key)
			if err != nil {
				return errStale
			}
			g = slices.DeleteFunc(g, func(m meta) bool { return m.cursor <= dc })
			if n > 0 && len(g) > n-len(ms) {
				g = g[len(g)-(n-len(ms)):]
			}
			ms = append(g, ms...)
		}
		if out, err = s.readLocked(ms); out == nil && err == nil {
			out = []Entry{}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// freshLocked runs read after bringing the cache up to date, and again (at
// most twice more) after a full read that ignores the index, when read
// found the file changed under the cache (by another process, between the
// refresh and the read, or in place behind a stat's back).
func (s *Store) freshLocked(read func() error) error {
	for try := 0; ; try++ {
		if err := s.refreshLocked(); err != nil {
			return err
		}
		err := read()
		if !errors.Is(err, errStale) || try == 2 {
			return err
		}
		s.cache, s.distrust = cache{}, true
	}
}

// selectLocked returns the entries with Cursor > cursor that keep (given
// their session key, scope and cursor; nil keeps all) accepts, in file order, at
// most limit of them (0 means all).
func (s *Store) selectLocked(cursor, limit int, keep func(key string, scope audience.Scope, cursor int) bool) ([]Entry, error) {
	c := &s.cache
	if cursor < c.floor {
		var out []Entry
		err := s.scanLocked(func(e Entry) bool {
			if e.Cursor > cursor && (keep == nil || keep(e.SessionKey, e.Scope, e.Cursor)) {
				out = append(out, e)
			}
			return limit <= 0 || len(out) < limit
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	if c.materialize() != nil {
		return nil, errStale
	}
	var ms []meta
	for i := c.from0(cursor); i < len(c.metas) && (limit <= 0 || len(ms) < limit); i++ {
		if m := c.metas[i]; m.cursor > cursor && (keep == nil || keep(c.keys.names[m.key], audience.Scope(c.scopeName(m.scope)), m.cursor)) {
			ms = append(ms, m)
		}
	}
	return s.readLocked(ms)
}

// from0 is where in metas (materialized) the entries above cursor may
// begin: found by binary search while the cursors rise in file order, else
// the start.
func (c *cache) from0(cursor int) int {
	if !c.sorted {
		return 0
	}
	return sort.Search(len(c.metas), func(i int) bool { return c.metas[i].cursor > cursor })
}

// SinceIn is Since for the entries of one memory scope: those of scope with
// Cursor > cursor, in file order, at most limit of them (0 means all).
// Dream reads a scope's batch with it. It goes through the entries above
// cursor without reading the other scopes' contents.
func (s *Store) SinceIn(scope audience.Scope, cursor, limit int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		out, err = s.selectLocked(cursor, limit, func(_ string, sc audience.Scope, _ int) bool { return sc == scope })
		return err
	})
	return out, err
}

// Backlog is what one memory scope has not read: its entries after its
// cursor (store.Backlog).
type Backlog = store.Backlog

// Backlogs lists the memory scopes that have entries above their cursor,
// the scope with the oldest such entry first: an entry counts for its
// scope when its cursor is above after and above cursors[scope] (a scope
// missing from cursors has read up to after). last is the highest cursor
// the history held when it looked: a scope not listed has no entry in
// (its cursor, last]. It reads no content: the cache already knows every
// entry's scope above the Dream cursor, so after should not be below it
// (the file is read otherwise).
func (s *Store) Backlogs(after int, cursors map[audience.Scope]int) (backlogs []Backlog, last int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var acc backlogCounter
	err = s.freshLocked(func() error {
		c := &s.cache
		last = c.maxCursor
		acc = backlogCounter{after: after, cursors: cursors, at: map[audience.Scope]int{}}
		if after < c.floor {
			return s.scanLocked(func(e Entry) bool {
				acc.add(e.Scope, e.Cursor)
				return true
			})
		}
		if c.materialize() != nil {
			return errStale
		}
		// The scope's bar by number, so the loop below neither hashes nor
		// compares a name.
		names := c.scopeNames()
		bars := make([]int, len(names))
		for i, name := range names {
			bars[i] = acc.bar(audience.Scope(name))
		}
		if c.scopes == nil && c.sorted {
			// One scope: its entries after its bar, found by search.
			if i := c.from0(bars[0]); i < len(c.metas) {
				acc.list = append(acc.list, Backlog{Scope: audience.Default, First: c.metas[i].cursor, Count: len(c.metas) - i})
			}
			return nil
		}
		counts := make([]Backlog, len(bars))
		for _, m := range c.metas[c.from0(after):] {
			if m.cursor <= bars[m.scope] {
				continue
			}
			b := &counts[m.scope]
			if b.Count == 0 || m.cursor < b.First {
				b.First = m.cursor
			}
			b.Count++
		}
		for i, b := range counts {
			if b.Count > 0 {
				b.Scope = audience.Scope(names[i])
				acc.list = append(acc.list, b)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return acc.sorted(), last, nil
}

// backlogCounter adds up Backlogs entry by entry.
type backlogCounter struct {
	after   int
	cursors map[audience.Scope]int
	at      map[audience.Scope]int // a scope's place in list
	list    []Backlog
}

// bar is the cursor above which an entry of scope is unread.
func (a *backlogCounter) bar(scope audience.Scope) int {
	if c, ok := a.cursors[scope]; ok {
		return max(c, a.after)
	}
	return a.after
}

func (a *backlogCounter) add(scope audience.Scope, cursor int) {
	if cursor <= a.bar(scope) {
		return
	}
	i, ok := a.at[scope]
	if !ok {
		i = len(a.list)
		a.at[scope] = i
		a.list = append(a.list, Backlog{Scope: scope, First: cursor})
	}
	b := &a.list[i]
	b.First = min(b.First, cursor)
	b.Count++
}

// sorted is the list, the oldest first entry first.
func (a *backlogCounter) sorted() []Backlog {
	slices.SortFunc(a.list, func(x, y Backlog) int { return x.First - y.First })
	return a.list
}

// Len is the number of valid entries in the file.
func (s *Store) Len() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return 0, err
	}
	return s.cache.count, nil
}

// Entries returns the entries whose cursors are listed, in file order; a
// cursor no entry has (compacted away, or never written) is left out. It
// reads the file once, up to the last of them: /why looks up the sources
// of a few memory lines with it.
func (s *Store) Entries(cursors ...int) ([]Entry, error) {
	if len(cursors) == 0 {
		return nil, nil
	}
	want := make(map[int]bool, len(cursors))
	low := cursors[0]
	for _, c := range cursors {
		want[c] = true
		low = min(low, c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		if low-1 < s.cache.floor {
			out, err = s.scanCursorsLocked(want)
			return err
		}
		out, err = s.selectLocked(low-1, len(want), func(_ string, _ audience.Scope, c int) bool { return want[c] })
		return err
	})
	return out, err
}

// scanCursorsLocked reads the entries whose cursors want lists from the
// file, stopping once it has them all. A line of the usual shape whose
// cursor is not wanted is skipped on its cursor alone, unparsed: the
// memory page's provenance of a line Dream has read is then a read of the
// file, not a parse of every entry (100,000 entries: 400 ms parsed under
// load). Any other line is parsed, as a scan does.
func (s *Store) scanCursorsLocked(want map[int]bool) ([]Entry, error) {
	var out []Entry
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	n, err := readLines(f, func(line []byte, _ int64) bool {
		if c, ok := cursorOf(line); ok && !want[c] {
			return true
		}
		if e, ok := s.parseLocked(line); ok && want[e.Cursor] {
			out = append(out, e)
		}
		return len(out) < len(want)
	})
	s.readBytes += n
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return out, nil
}
