package history

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/dreamgate/dreamgate/workspace"
)

// DreamCursor is the highest cursor Dream has consumed (memory/.dream_cursor);
// 0 when the file is missing or unreadable as a number (nanobot's rule).
func (s *Store) DreamCursor() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, present, valid, err := readIntFile(s.dreamPath)
	if err != nil {
		return 0, err
	}
	if present && !valid {
		s.warnOnce("dream-cursor-bad", "the dream cursor file does not hold a non-negative integer; treating it as 0")
	}
	return n, nil
}

func (s *Store) dreamCursorLocked() int {
	n, present, valid, err := readIntFile(s.dreamPath)
	if err != nil {
		s.warnOnce("dream-cursor-read", "cannot read the dream cursor; treating it as 0", "err", err)
		return 0
	}
	if present && !valid {
		s.warnOnce("dream-cursor-bad", "the dream cursor file does not hold a non-negative integer; treating it as 0")
	}
	return n
}

// SetDreamCursor records that Dream consumed every entry up to n. The write
// is atomic and durable.
func (s *Store) SetDreamCursor(n int) error {
	if n < 0 {
		return fmt.Errorf("set dream cursor to %d: %w", n, ErrNegativeCursor)
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := workspace.WriteFile(s.dreamPath, []byte(strconv.Itoa(n)), fileMode); err != nil {
		return fmt.Errorf("set dream cursor: %w", err)
	}
	s.hook("dream-cursor")
	s.pruneLocked(n)
	return nil
}

// LastCursor is the highest cursor handed out so far (0 if none): the larger
// of memory/.cursor and the highest cursor in the file. The next Append gets
// LastCursor()+1.
func (s *Store) LastCursor() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return 0, err
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return 0, err
	}
	return max(counter, s.cache.maxCursor), nil
}

// Compact drops the oldest entries Dream has consumed (Cursor <= the dream
// cursor) while more than maxEntries valid entries remain. It never drops an
// entry Dream has not read, even if that leaves more than maxEntries (it logs
// a warning then). Malformed lines before the first kept entry go too; later
// ones are kept as they are. The file is replaced atomically, and
// memory/.cursor is made durable first so numbering continues past every
// dropped cursor. maxEntries <= 0 means no limit.
func (s *Store) Compact(maxEntries int) (dropped int, err error) {
	if maxEntries <= 0 {
		return 0, nil
	}
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	dropped, err = s.compactLocked(maxEntries)
	if err != nil {
		return 0, fmt.Errorf("compact history: %w", err)
	}
	return dropped, nil
}

func (s *Store) compactLocked(maxEntries int) (int, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	type line struct {
		raw   []byte
		entry Entry
		ok    bool
	}
	var lines []line
	valid, maxCursor := 0, 0
	for raw := range bytes.Lines(data) {
		raw = bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		e, ok := s.parseLocked(raw)
		if ok {
			valid++
			maxCursor = max(maxCursor, e.Cursor)
		}
		lines = append(lines, line{raw: raw, entry: e, ok: ok})
	}
	if valid <= maxEntries {
		return 0, nil
	}
	dc := s.dreamCursorLocked()
	dropped, keepFrom := 0, 0
	for keepFrom < len(lines) {
		l := lines[keepFrom]
		if l.ok && (valid-dropped <= maxEntries || l.entry.Cursor > dc) {
			break
		}
		if l.ok {
			dropped++
		}
		keepFrom++
	}
	if dropped == 0 {
		s.logger.Warn("history over its entry limit, but every entry is unread by Dream; keeping all",
			"entries", valid, "limit", maxEntries)
		return 0, nil
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return 0, err
	}
	last := max(counter, maxCursor)
	if err := workspace.WriteFile(s.cursorPath, []byte(strconv.Itoa(last)), fileMode); err != nil {
		return 0, err
	}
	var out bytes.Buffer
	out.Grow(len(data))
	for _, l := range lines[keepFrom:] {
		out.Write(l.raw)
		out.WriteByte('\n')
	}
	if err := workspace.WriteFile(s.path, out.Bytes(), fileMode); err != nil {
		return 0, err
	}
	s.hook("history-compact")
	s.cache = cache{}
	s.dropIndexLocked()
	if left := valid - dropped; left > maxEntries {
		s.logger.Warn("history still over its entry limit: the rest is unread by Dream and is kept",
			"entries", left, "limit", maxEntries)
	}
	s.logger.Info("compacted history", "dropped", dropped, "kept", valid-dropped)
	return dropped, nil
}
