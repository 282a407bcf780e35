package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
)

// Conversations in a database (the store's PostgreSQL engine) instead of
// files: the same Session, whose lines and metadata are the same JSON,
// kept as rows by a store.Conversations. A line's index is its place, so
// there is no torn line, no tail mark and no checksum to check; a load
// reads the rows from the margin before last_consolidated on, and the
// archived head only when asked. A session's identity (its prefix) is
// then the file name it would have, never a path.
//
// One process per conversation is not enforced across processes here (the
// files' flock has no counterpart yet): two gateways must not answer the
// same conversations on one database, as on one state directory. Claims
// shared across processes come with the work-sharing inbox.

// NewStoreOn returns a Store that keeps conversations in conv.
func NewStoreOn(conv store.Conversations, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{conv: conv, logger: logger, now: time.Now, open: map[string]*Session{}, aside: map[string]*Session{}}
}

// loadDB loads key's live conversation from the database, or starts one
// in memory when it has none.
func (st *Store) loadDB(key string) (*Session, error) {
	c, ok, err := st.conv.Live(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return st.create(key, st.base(key)), nil
	}
	return st.loadGeneration(c, st.base(key))
}

// loadGeneration loads one generation from the database under the
// identity prefix.
func (st *Store) loadGeneration(c store.Conversation, prefix string) (*Session, error) {
	s := &Session{prefix: prefix, logger: st.logger, now: st.now, afterWrite: st.afterWrite, conv: st.conv}
	if c.Meta != nil {
		if err := json.Unmarshal(c.Meta, &s.meta); err != nil {
			st.logger.Warn("session metadata unreadable; starting it anew, messages kept", "session", c.Key, "err", err)
			s.meta = meta{}
		}
	}
	if s.meta.ID == "" {
		s.meta = meta{Created: st.now().UTC()}
	}
	s.meta.Key, s.meta.ID, s.meta.Tail = c.Key, c.ID, nil
	keepFrom := max(s.meta.LastConsolidated-keepBefore-maxTurnBack, 0)
	n, err := s.readRows(keepFrom, c.Lines)
	if err != nil {
		return nil, err
	}
	if !s.checkLastConsolidated(n) && keepFrom > 0 {
		s.msgs, s.lines, s.base, s.origins = nil, nil, 0, nil
		if _, err := s.readRows(0, c.Lines); err != nil {
			return nil, err
		}
	}
	s.dropBeforeLocked(s.baseFor(s.meta.LastConsolidated))
	s.audienceFromOrigins()
	return s, nil
}

// readRows reads the generation's lines from index from on into s and
// returns how many messages it has; lines is the count it holds.
func (s *Session) readRows(from, lines int) (int, error) {
	if from > lines {
		from = 0
	}
	rows, err := s.conv.Lines(s.meta.Key, s.meta.ID, from, 0)
	if err != nil {
		return 0, err
	}
	s.base = from
	for i, row := range rows {
		m, err := s.parseRow(from+i, row)
		if err != nil {
			return 0, err
		}
		s.msgs = append(s.msgs, m)
		s.lines = append(s.lines, lineRef{})
	}
	return from + len(rows), nil
}

// parseRow reads the stored line of message idx, noting its origin.
func (s *Session) parseRow(idx int, row []byte) (llm.Message, error) {
	var l storedLine
	if err := json.Unmarshal(row, &l); err != nil || l.Role == "" {
		return llm.Message{}, fmt.Errorf("read session %s: message %d is not a message line", s.meta.Key, idx)
	}
	m := l.Message
	if l.Origin != nil {
		s.addOrigin(idx, *l.Origin)
		m.Sender = l.Origin.sender()
	}
	return m, nil
}

// writeRows stores lines as the next messages. The caller holds s.mu.
func (s *Session) writeRows(lines ...any) ([]lineRef, error) {
	if s.stale {
		return nil, errStale
	}
	rows := make([][]byte, len(lines))
	for i, l := range lines {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(l); err != nil {
			return nil, fmt.Errorf("encode message for session %s: %w", s.meta.Key, err)
		}
		rows[i] = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	if err := s.conv.Append(s.meta.Key, s.meta.ID, s.base+len(s.msgs), rows); err != nil {
		return nil, err
	}
	s.hook("session-append")
	return make([]lineRef, len(lines)), nil
}

// writeMetaRow stores the metadata. The caller holds s.mu.
func (s *Session) writeMetaRow() error {
	if s.stale {
		return errStale
	}
	s.meta.Tail = nil
	data, err := json.Marshal(s.meta)
	if err != nil {
		return fmt.Errorf("encode session metadata: %w", err)
	}
	if err := s.conv.PutMeta(s.meta.Key, s.meta.ID, data); err != nil {
		return err
	}
	s.hook("session-meta")
	return nil
}

// readHeadRows returns messages [0, s.base) from the database. The caller
// holds s.mu.
func (s *Session) readHeadRows() ([]llm.Message, error) {
	rows, err := s.conv.Lines(s.meta.Key, s.meta.ID, 0, s.base)
	if err != nil {
		return nil, err
	}
	if len(rows) != s.base {
		return nil, fmt.Errorf("read session %s: %d messages before %d", s.meta.Key, len(rows), s.base)
	}
	head := make([]llm.Message, 0, s.base)
	for i, row := range rows {
		m, err := s.parseRow(i, row)
		if err != nil {
			return nil, err
		}
		head = append(head, m)
	}
	s.headRead = true
	return head, nil
}

// saveIDRow is SaveID on the database: the metadata is written unless the
// stored one holds this ID already.
func (s *Session) saveIDRow() error {
	c, ok, err := s.conv.Generation(s.meta.Key, s.meta.ID)
	if err != nil {
		return err
	}
	if ok && c.Meta != nil {
		var stored struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(c.Meta, &stored) == nil && stored.ID == s.meta.ID {
			return nil
		}
	}
	return s.writeMetaRow()
}

// rotateDB is Rotate on the database: the live generation is set aside
// (its rows stay), and a fresh one starts in memory. The caller holds
// st.mu.
func (st *Store) rotateDB(key string) (old, fresh *Session, err error) {
	if old, err = st.liveLocked(key); err != nil {
		return nil, nil, err
	}
	if err := st.conv.SetAside(key, old.ID()); err != nil {
		return nil, nil, fmt.Errorf("set session %s aside: %w", key, err)
	}
	old.mu.Lock()
	old.prefix = st.base(key) + "." + old.meta.ID
	aside := old.prefix
	old.mu.Unlock()
	st.aside[aside] = old
	fresh = st.create(key, st.base(key))
	st.open[key] = fresh
	return old, fresh, nil
}

// listDB lists the database's generations that hold messages: live ones
// (setAside false) or those /new set aside.
func (st *Store) listDB(setAside bool) ([]store.Conversation, error) {
	all, err := st.conv.List()
	if err != nil {
		return nil, err
	}
	var out []store.Conversation
	for _, c := range all {
		if c.Lines > 0 && c.Live != setAside {
			out = append(out, c)
		}
	}
	return out, nil
}

// archiveFilesDB is ArchiveFiles on the database: every generation, named
// as its message file would be.
func (st *Store) archiveFilesDB() ([]ArchiveFile, error) {
	all, err := st.conv.List()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]ArchiveFile, 0, len(all))
	for _, c := range all {
		name := st.base(c.Key)
		if !c.Live {
			name += "." + c.ID
		}
		stamp := strconv.Itoa(c.Lines) + ":" + strconv.FormatInt(c.Modified.UnixNano(), 10) + "/" + strconv.FormatUint(uint64(lineSum(c.Meta)), 16)
		out = append(out, ArchiveFile{Name: name, Key: c.Key, Stamp: stamp})
	}
	return out, nil
}

// readArchivedDB is ReadArchived on the database. Positions are message
// indexes alone (NextAt stays 0).
func (st *Store) readArchivedDB(name string, resume func(id string) (int, int64), fn func(i int, m llm.Message) error) (Archived, error) {
	key, id, ok := parseFileName(name)
	if !ok {
		return Archived{}, fmt.Errorf("read conversation: %q is not a conversation's name", name)
	}
	var c store.Conversation
	var err error
	if id == "" {
		c, ok, err = st.conv.Live(key)
	} else {
		c, ok, err = st.conv.Generation(key, id)
	}
	if err != nil {
		return Archived{}, err
	}
	if !ok {
		return Archived{}, ErrChanged
	}
	s := &Session{logger: slog.New(slog.DiscardHandler), conv: st.conv}
	if c.Meta != nil && json.Unmarshal(c.Meta, &s.meta) != nil {
		s.meta = meta{}
	}
	s.meta.Key, s.meta.ID = c.Key, c.ID
	out := Archived{Key: key, ID: c.ID}
	from, _ := resume(c.ID)
	lc := min(s.meta.LastConsolidated, c.Lines)
	if from < 0 || from > lc {
		from = 0
	}
	out.Next = from
	if from < lc {
		rows, err := st.conv.Lines(key, c.ID, from, lc)
		if err != nil {
			return Archived{}, err
		}
		for i, row := range rows {
			m, err := s.parseRow(from+i, row)
			if err != nil {
				return Archived{}, err
			}
			if err := fn(from+i, m); err != nil {
				return Archived{}, err
			}
			out.Next = from + i + 1
		}
	}
	s.audienceFromOrigins()
	out.Audience = s.meta.Audience
	if out.Audience.IsZero() {
		out.Audience = audience.Unknown(key)
	}
	return out, nil
}

// unarchivedDB is Unarchived on the database.
func (st *Store) unarchivedDB() (map[string]int, error) {
	live, err := st.listDB(false)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range live {
		var m meta
		if c.Meta != nil && json.Unmarshal(c.Meta, &m) != nil {
			m = meta{}
		}
		if n := c.Lines - m.LastConsolidated; n > 0 {
			out[c.Key] = n
		}
	}
	return out, nil
}
