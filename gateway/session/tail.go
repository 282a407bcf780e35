package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/dreamgate/dreamgate/llm"
)

// A long conversation is mostly archived, and what is archived is never
// replayed again, so a session holds in memory only its unarchived messages
// and a short margin before them, and a load reads only that part of the
// file: the metadata's tail mark says at which byte it starts. The mark is
// a hint checked against the file, never trusted blindly: a file that is
// shorter, was replaced or edited, or whose offset does not start a line is
// read whole (and the margin is then cut from what was read).

// keepBefore is how many messages before last_consolidated stay in memory
// at least, from the user message that opens their turn. The consolidator's
// continuity window replays at most the session's last 8 messages (its
// keepMessages), moved back to their turn's user message, and never
// starts before a user message; since the margin starts at a user message
// at least keepBefore >= 8 messages before last_consolidated, every window
// lies within it.
const keepBefore = 16

// maxTurnBack bounds how much further back than keepBefore the margin
// reaches looking for that user message (a long tool chain): past it, the
// margin starts mid-turn, and the continuity window may come out shorter
// than it would with the whole file in memory.
const maxTurnBack = 256

// tailMark locates message Index in the message file.
type tailMark struct {
	// Index is the message's position among the file's messages (lines
	// that do not parse do not count), as last_consolidated counts.
	Index int `json:"index"`
	// Offset is the byte offset at which its line starts.
	Offset int64 `json:"offset"`
	// Sum is the CRC-32 (IEEE) of that line without its newline: a file
	// replaced or rewritten since is caught by it.
	Sum uint32 `json:"crc32"`
	// OldSum is set in marks written by earlier versions, which summed
	// with CRC-32C; such a mark is read as no mark (the file is read
	// whole, once, and a new mark recorded). CRC-32C was dropped because
	// its table costs about 0.2 ms to build in every process that loads a
	// session, a third of a one-shot chat's own work; IEEE's is cheap.
	OldSum *uint32 `json:"crc32c,omitempty"`
}

// lineRef is where a message's line is and its checksum.
type lineRef struct {
	off int64
	sum uint32
}

func lineSum(line []byte) uint32 { return crc32.ChecksumIEEE(line) }

// errMarkMismatch: the line at the mark's offset is not the marked one.
var errMarkMismatch = errors.New("the line at the tail mark does not match it")

// loadMessages reads the message file into s: from the tail mark when it
// holds, else whole (whole is then true). It then sets last_consolidated
// right (see the reset below) and cuts what is held in memory down to the
// tail and its margin, setting the mark to where that starts.
func (s *Session) loadMessages() (whole bool, err error) {
	f, err := os.Open(s.prefix + ".jsonl")
	if errors.Is(err, fs.ErrNotExist) {
		s.checkLastConsolidated(0)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open session %s: %w", s.meta.Key, err)
	}
	defer f.Close()
	lc := s.meta.LastConsolidated
	if m := s.meta.Tail; m != nil && m.OldSum != nil {
		s.meta.Tail = nil // an earlier version's mark: see tailMark.OldSum
	}
	if m := s.meta.Tail; m != nil {
		ok, why, err := s.readFromMark(f, m, lc)
		if err != nil {
			return false, err
		}
		if ok {
			return false, nil
		}
		s.logger.Warn("session tail mark does not match its file; reading the file whole",
			"session", s.meta.Key, "reason", why, "index", m.Index, "offset", m.Offset)
		s.msgs, s.lines, s.base, s.needsNewline = nil, nil, 0, false
	}
	// Messages well before last_consolidated are parsed (each one counts
	// for the indexes) but not kept.
	keepFrom := max(lc-keepBefore-maxTurnBack, 0)
	n, err := s.readWhole(f, keepFrom)
	if err != nil {
		return true, err
	}
	if !s.checkLastConsolidated(n) && keepFrom > 0 {
		// From 0, every message is needed again.
		s.msgs, s.lines, s.base, s.needsNewline = nil, nil, 0, false
		if _, err := s.readWhole(f, 0); err != nil {
			return true, err
		}
	}
	base := s.baseFor(s.meta.LastConsolidated)
	s.dropBeforeLocked(base)
	s.meta.Tail = s.markLocked(base)
	return true, nil
}

// recordMark saves the metadata with the tail mark a whole read found, so
// that the next load of a long session (one from before the mark, or
// nanobot's, or one whose mark was stale) reads only its tail. It does not
// when the metadata on disk is no longer loaded, the bytes it was loaded
// from: another process changed it meanwhile, and its record wins. A
// failed write only costs the next load a whole read again.
func (s *Session) recordMark(loaded []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now, err := os.ReadFile(s.prefix + ".meta.json"); err != nil || !bytes.Equal(now, loaded) {
		return
	}
	if err := s.writeMetaLocked(); err != nil {
		s.logger.Warn("could not record where a session's tail starts; its next load reads it whole again", "session", s.meta.Key, "err", err)
		return
	}
	s.logger.Info("recorded where a long session's tail starts", "session", s.meta.Key, "index", s.meta.Tail.Index)
}

// checkLastConsolidated resets last_consolidated to 0 when it is beyond
// the n messages of the file, and reports whether it was in range.
func (s *Session) checkLastConsolidated(n int) bool {
	if lc := s.meta.LastConsolidated; lc < 0 || lc > n {
		// The record does not match these messages (lost lines, a file
		// from elsewhere), so it says nothing about which were archived.
		// Clamping would hide the tail from the prompt and the archive
		// alike; from 0 they are archived again, and nothing is lost.
		s.logger.Warn("session last_consolidated beyond its messages; reset to 0, so they are archived again",
			"session", s.meta.Key, "value", lc, "messages", n)
		s.meta.LastConsolidated = 0
		return false
	}
	return true
}

// readWhole reads the file from its start, keeping messages from index
// keepFrom on, and returns how many messages it has.
func (s *Session) readWhole(f *os.File, keepFrom int) (int, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read session %s: %w", s.meta.Key, err)
	}
	s.base = keepFrom
	return s.scan(bufio.NewReaderSize(f, 64<<10), 0, 0, -1, nil, func(i int, m llm.Message, ref lineRef) {
		if i >= keepFrom {
			s.msgs = append(s.msgs, m)
			s.lines = append(s.lines, ref)
		}
	})
}

// readFromMark reads the file from the mark m when it holds for a session
// whose last_consolidated is lc. It reports why not when it does not (the
// caller then reads the file whole); err is set only when reading fails.
func (s *Session) readFromMark(f *os.File, m *tailMark, lc int) (ok bool, why string, err error) {
	if m.Index <= 0 || m.Index > lc || m.Offset <= 0 {
		return false, "the mark is outside the archived messages", nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false, "", fmt.Errorf("read session %s: %w", s.meta.Key, err)
	}
	if m.Offset >= fi.Size() {
		return false, "the file is shorter than the mark", nil
	}
	if _, err := f.Seek(m.Offset-1, io.SeekStart); err != nil {
		return false, "", fmt.Errorf("read session %s: %w", s.meta.Key, err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if b, err := r.ReadByte(); err != nil || b != '\n' {
		return false, "the mark's offset does not start a line", nil
	}
	s.base = m.Index
	sum := m.Sum
	n, err := s.scan(r, m.Offset, m.Index, -1, &sum, func(_ int, m llm.Message, ref lineRef) {
		s.msgs = append(s.msgs, m)
		s.lines = append(s.lines, ref)
	})
	switch {
	case errors.Is(err, errMarkMismatch):
		return false, "the line at the mark is not the marked one (the file was replaced or rewritten)", nil
	case err != nil:
		return false, "", err
	case n == m.Index:
		return false, "the marked line is no message", nil
	case lc > n:
		return false, "fewer messages than last_consolidated", nil
	}
	return true, "", nil
}

// readHeadLocked returns messages [0, s.base) from the file: the archived
// ones not held in memory. The caller holds s.mu.
func (s *Session) readHeadLocked() ([]llm.Message, error) {
	if s.conv != nil {
		return s.readHeadRows()
	}
	f, err := os.Open(s.prefix + ".jsonl")
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", s.meta.Key, err)
	}
	defer f.Close()
	if len(s.lines) == 0 {
		return nil, fmt.Errorf("read session %s: messages from %d on are not held", s.meta.Key, s.base)
	}
	limit := s.lines[0].off
	head := make([]llm.Message, 0, s.base)
	n, err := s.scan(bufio.NewReaderSize(io.LimitReader(f, limit), 64<<10), 0, 0, limit, nil, func(_ int, m llm.Message, _ lineRef) {
		head = append(head, m)
	})
	if err != nil {
		return nil, err
	}
	if n != s.base {
		return nil, fmt.Errorf("read session %s: %d messages before offset %d, want %d (the file changed)", s.meta.Key, n, limit, s.base)
	}
	s.headRead = true
	return head, nil
}

// scan reads message lines from r, which is at byte offset off of the file
// where message idx starts, calling keep for each message, and returns the
// index after the last one. Lines that do not parse are skipped with a
// warning; a last line without its newline (a crash mid-write) sets
// needsNewline, unless limit > 0 (a read of the head, which ends before the
// file does). With first set, the first line must have that checksum, else
// errMarkMismatch.
func (s *Session) scan(r *bufio.Reader, off int64, idx int, limit int64, first *uint32, keep func(int, llm.Message, lineRef)) (int, error) {
	bad, lineNo := 0, 0
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			complete := line[len(line)-1] == '\n'
			body := line
			if complete {
				body = line[:len(line)-1]
			} else if limit <= 0 {
				s.needsNewline = true
			}
			ref := lineRef{off: off, sum: lineSum(body)}
			off += int64(len(line))
			if first != nil {
				if !complete || ref.sum != *first {
					return idx, errMarkMismatch
				}
				first = nil
			}
			if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 {
				var l storedLine
				jerr := json.Unmarshal(trimmed, &l)
				m := l.Message
				if jerr == nil && l.Answered {
					s.answered = max(s.answered, idx) // not a message (origin.go)
				} else if jerr != nil || m.Role == "" {
					bad++
					if bad == 1 {
						s.logger.Warn("skipping unreadable session line", "session", s.meta.Key, "line", lineNo, "offset", ref.off, "torn", !complete)
					}
				} else {
					if l.Origin != nil {
						s.addOrigin(idx, *l.Origin)
						m.Sender = l.Origin.sender()
					}
					keep(idx, m, ref)
					idx++
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return idx, fmt.Errorf("read session %s: %w", s.meta.Key, err)
		}
	}
	if bad > 1 {
		s.logger.Warn("skipped unreadable session lines", "session", s.meta.Key, "count", bad)
	}
	return idx, nil
}

// baseFor is where the messages held in memory start once lc messages are
// archived: the user message at or before lc-keepBefore, looked for at most
// maxTurnBack further back; never before the current start. The caller
// holds s.mu.
func (s *Session) baseFor(lc int) int {
	target := lc - keepBefore
	if target <= s.base {
		return s.base
	}
	floor := max(s.base, target-maxTurnBack)
	for i := target; i >= floor; i-- {
		if s.msgs[i-s.base].Role == llm.RoleUser {
			return i
		}
	}
	return floor
}

// markLocked is the tail mark of message base, nil for 0 (the file is then
// read whole anyway). The caller holds s.mu.
func (s *Session) markLocked(base int) *tailMark {
	if base <= 0 || base-s.base >= len(s.lines) {
		return nil
	}
	ref := s.lines[base-s.base]
	return &tailMark{Index: base, Offset: ref.off, Sum: ref.sum}
}

// dropBeforeLocked lets go of the messages before index base. They move to
// new arrays, so the old ones are freed once no caller holds a slice of
// them (and slices handed out stay as they were). The caller holds s.mu.
func (s *Session) dropBeforeLocked(base int) {
	d := base - s.base
	if d <= 0 {
		return
	}
	s.msgs = slices.Clone(s.msgs[d:])
	s.lines = slices.Clone(s.lines[d:])
	s.base = base
}
