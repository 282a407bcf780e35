package history

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// Source names the session messages an archive entry was made from
// (store.Source).
type Source = store.Source

// errBadSource: AppendFrom was given a source that names no messages.
var errBadSource = errors.New("source must name a session id and a non-empty message range")

// AppendFrom is AppendIn for an archive entry made from session messages:
// the entry also records src (as session_id and range, after nanobot's
// fields), which ArchivedAt looks up. The scope is the archived
// conversation's (audience.Default for the operator's), so that every
// archive states where its words may go.
func (s *Store) AppendFrom(scope audience.Scope, content, sessionKey string, src Source) (Entry, error) {
	if !src.Valid() {
		return Entry{}, fmt.Errorf("append history entry from %+v: %w", src, errBadSource)
	}
	return s.append(scope, content, sessionKey, src)
}

// ArchivedAt reports whether the messages of session generation
// (sessionKey, sessionID) starting at index from are already archived: it
// returns the newest entry recorded from that generation when its range
// starts at from. A caller about to archive from its last_consolidated
// index then finds the entry a crash left unrecorded, and moves
// last_consolidated to the entry's Range[1] instead.
//
// Only the newest entry of each generation is kept in view (an in-memory
// index built while the file is read, so a lookup costs what a Since call
// does): a generation's entries are appended in message order and its
// last_consolidated only grows, so an unrecorded entry is always its
// newest.
func (s *Store) ArchivedAt(sessionKey, sessionID string, from int) (Entry, bool, error) {
	if sessionID == "" {
		return Entry{}, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []Entry
	err := s.freshLocked(func() error {
		found = nil
		mark, ok := s.cache.ranges[rangeKey(sessionKey, sessionID)]
		if !ok && s.cache.from > 0 && !s.cache.prefixRanges {
			// The reading started past a prefix Dream has read (index.go); an
			// entry a crash left unrecorded may be in it once Dream has read
			// it, so the prefix is scanned for sources once, here, where an
			// archive is about to cost a model call anyway.
			if err := s.notePrefixRangesLocked(); err != nil {
				return err
			}
			mark, ok = s.cache.ranges[rangeKey(sessionKey, sessionID)]
		}
		if !ok || mark.from != from {
			return nil
		}
		var err error
		found, err = s.selectLocked(mark.cursor-1, 1, func(_ string, _ audience.Scope, cursor int) bool { return cursor == mark.cursor })
		return err
	})
	if err != nil {
		return Entry{}, false, err
	}
	if len(found) == 0 {
		// Not archived, or out of sight for the cache (a rewrite by another
		// process between the refresh and the scan); the caller archives,
		// as before.
		return Entry{}, false, nil
	}
	return found[0], true, nil
}

// notePrefixRangesLocked adds the sources of the prefix the reading
// skipped to the cache's ranges, without overriding the newer ones read
// after it.
func (s *Store) notePrefixRangesLocked() error {
	c := &s.cache
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	var prefix cache
	_, err = readLines(io.NewSectionReader(f, 0, c.from), func(line []byte, _ int64) bool {
		if e, kind := s.peekLocked(line); kind == lineOK {
			prefix.noteRange(e)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	if c.ranges == nil {
		c.ranges = map[string]rangeMark{}
	}
	for k, m := range prefix.ranges {
		if _, newer := c.ranges[k]; !newer {
			c.ranges[k] = m
		}
	}
	c.prefixRanges = true
	return nil
}

// rangeMark is the newest archived range of one session generation.
type rangeMark struct {
	cursor   int
	from, to int
}

func rangeKey(sessionKey, sessionID string) string {
	return sessionKey + "\x00" + sessionID
}

// noteRange records e's source in the cache's index of newest ranges; it
// is called for every valid entry read or appended, whether or not the
// entry itself is kept in the cache.
func (c *cache) noteRange(e Entry) {
	if e.SessionID == "" {
		return
	}
	if c.ranges == nil {
		c.ranges = map[string]rangeMark{}
	}
	c.ranges[rangeKey(e.SessionKey, e.SessionID)] = rangeMark{cursor: e.Cursor, from: e.Range[0], to: e.Range[1]}
}
