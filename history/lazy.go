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

// readLocked reads back the entries ms (in file order), checking that
// each line still holds the entry the cache noted there.
func (s *Store) readLocked(ms []meta) ([]Entry, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	c := &s.cache
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
	out := make([]Entry, 0, len(ms))
	take := func(m meta, line []byte) bool {
		e, ok := s.parseLocked(line)
		if !ok || e.Cursor != m.cursor || e.SessionKey != c.keys.names[m.key] {
			return false
		}
		out = append(out, e)
		return true
	}
	if len(ms) <= lazyBatch {
		for _, m := range ms {
			buf := make([]byte, m.n)
			if _, err := f.ReadAt(buf, m.off); err != nil {
				if errors.Is(err, io.EOF) {
					return nil, errStale
				}
				return nil, fmt.Errorf("read history: %w", err)
			}
			if buf[m.n-1] != '\n' || !take(m, buf[:m.n-1]) {
				return nil, errStale
			}
		}
		return out, nil
	}
	first, last := ms[0], ms[len(ms)-1]
	next, bad := 0, false
	_, err = readLines(io.NewSectionReader(f, first.off, last.off+last.n-first.off), func(line []byte, at int64) bool {
		m := ms[next]
		if first.off+at != m.off {
			return true // an entry not asked for, or a broken line
		}
		if int64(len(line))+1 != m.n || !take(m, line) {
			bad = true
			return false
		}
		next++
		return next < len(ms)
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if bad || next != len(ms) {
		return nil, errStale
	}
	return out, nil
}
