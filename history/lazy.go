package history

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errStale: the file no longer holds, at the cache's offsets, the entries
// the cache noted (another process replaced or rewrote it after the
// refresh); the read is done again after a full read (freshLocked).
var errStale = errors.New("history.jsonl changed while it was read")

// lazyBatch is the most entries read back one pread each; more are read in
// one pass over the span they lie in.
const lazyBatch = 16

// memoBudget bounds the content bytes the cache keeps of entries read back
// or appended: a turn renders the same Recent history as the last one, and
// should not read it again, but the backlog must not come back into memory.
const memoBudget = 1 << 20

// remember keeps e, whose line starts at off, for the next read of it,
// within memoBudget (when it is spent, what was kept is dropped).
func (c *cache) remember(off int64, e Entry) {
	if len(e.Content) > memoBudget/4 {
		return
	}
	if c.memo == nil || c.memoBytes+len(e.Content) > memoBudget {
		c.memo, c.memoBytes = map[int64]Entry{}, 0
	}
	c.memo[off] = e
	c.memoBytes += len(e.Content)
}

// readLocked returns the entries ms (in file order): those it kept from
// the memo, the others read back from the file, checking that each line
// still holds the entry the cache noted there.
func (s *Store) readLocked(ms []meta) ([]Entry, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	c := &s.cache
	out := make([]Entry, len(ms))
	var missing []int // positions in ms
	for i, m := range ms {
		if e, ok := c.memo[m.off]; ok && e.Cursor == m.cursor {
			out[i] = e
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, errStale
		}
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat history: %w", err)
	}
	if c.file == nil || !os.SameFile(fi, c.file) || fi.Size() < c.offset {
		return nil, errStale
	}
	take := func(i int, line []byte) bool {
		m := ms[i]
		e, ok := s.parseLocked(line)
		if !ok || e.Cursor != m.cursor || e.SessionKey != c.keys.names[m.key] ||
			(m.scope >= 0 && string(e.Scope) != c.scopeName(m.scope)) {
			return false
		}
		out[i] = e
		c.remember(m.off, e)
		return true
	}
	if len(missing) <= lazyBatch {
		for _, i := range missing {
			m := ms[i]
			buf := make([]byte, m.n)
			if _, err := f.ReadAt(buf, m.off); err != nil {
				if errors.Is(err, io.EOF) {
					return nil, errStale
				}
				return nil, fmt.Errorf("read history: %w", err)
			}
			if buf[m.n-1] != '\n' || !take(i, buf[:m.n-1]) {
				return nil, errStale
			}
		}
		return out, nil
	}
	first, last := ms[missing[0]], ms[missing[len(missing)-1]]
	next, bad := 0, false
	_, err = readLines(io.NewSectionReader(f, first.off, last.off+last.n-first.off), func(line []byte, at int64) bool {
		i := missing[next]
		if first.off+at != ms[i].off {
			return true // an entry not asked for or kept, or a broken line
		}
		if int64(len(line))+1 != ms[i].n || !take(i, line) {
			bad = true
			return false
		}
		next++
		return next < len(missing)
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if bad || next != len(missing) {
		return nil, errStale
	}
	return out, nil
}
