// Package session stores conversations: one append-only JSONL file of
// messages per session key plus a small metadata record written atomically.
// The files live in the state directory, outside the workspace, so the
// agent's file tools cannot read other people's chats.
//
// A turn only ever appends to the message file; it is never rewritten. /new
// renames the current files aside (nothing is deleted) and starts afresh
// under the same key. A set-aside conversation ("<base>.<id>.jsonl") is
// never live again; it is only read to archive its tail (aside.go), and its
// own "<base>.<id>.meta.json" records how far that got, so a process killed
// before the archive finished leaves it for the next one's disk scan.
//
// A conversation has at most one writing process: loading a key takes an
// exclusive, non-blocking lock on "<base>.lock" (lock.go) before it reads
// the files, and a session writes only while it holds it. A second process
// that asks for the key meanwhile gets a *LockedError, whose Sentence its
// user reads. A loaded session keeps its lock and append handle while its
// process works on it and may then be put to sleep (Release): both are let
// go, the session stays in memory, and waking it takes the lock again and
// reloads it if another process changed its files meanwhile. So a gateway
// holds descriptors only for the conversations it is answering. The key's
// lock follows the key, not the file, so /new's rotation keeps it.
//
// A session holds in memory only its unarchived messages and a short margin
// before them, and a load reads the file from where that part starts, found
// through a checked "tail" mark in the metadata (tail.go): a long
// conversation costs a turn no more than a short one.
//
// It imports llm (for the message type), workspace (the atomic write) and
// the internal/leftovers sweep.
package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
	"github.com/gofrs/flock"
)

type meta struct {
	Key              string    `json:"key"`
	ID               string    `json:"id"`
	Created          time.Time `json:"created"`
	LastConsolidated int       `json:"last_consolidated"`
	LastSummary      string    `json:"last_summary,omitempty"`
	LastSummaryAt    time.Time `json:"last_summary_at,omitzero"`
	// Tail says where in the message file the part a load must read
	// starts (see tail.go); absent, the whole file is read. Readers that
	// do not know it (nanobot) ignore it.
	Tail *tailMark `json:"tail,omitempty"`
	// Audience is who can read the conversation, as its platform said
	// (audience.Audience's text form): recorded at its first message, so
	// that work done without a message (an idle archive, a disk scan, a
	// set-aside tail) archives under it. Absent in conversations recorded
	// before audiences were: see Session.Audience.
	Audience audience.Audience `json:"audience,omitzero"`
}

// Session is one conversation. Its methods are safe for concurrent use; the
// gateway runs one turn at a time per session.
type Session struct {
	logger *slog.Logger
	now    func() time.Time
	wrap   func(io.Writer) io.Writer // nil: write to file directly
	// afterWrite is the store's SetAfterWrite hook, nil in production.
	afterWrite func(point string)

	mu     sync.Mutex
	prefix string // path without ".jsonl" / ".meta.json"
	meta   meta
	// msgs holds the messages from index base on: the unarchived ones
	// and a margin of archived ones before them (see tail.go). An index is
	// always a position in the whole file. lines[i] locates msgs[i]'s line.
	base  int
	msgs  []llm.Message
	lines []lineRef
	file  *os.File // append handle, opened on first append
	// lock is the conversation's lock while this process holds it (nil
	// when it never took it, or let it go). asleep says it was let go
	// (lock.go), stamp what the files were then; stale, that another
	// process has the conversation now: the session must be loaded again.
	lock   *flock.Flock
	asleep bool
	stale  bool
	stamp  fileStamp
	// needsNewline is set when the file ends in a torn line (a crash
	// mid-write), so the next append starts on a line of its own.
	needsNewline bool
	// origins are the senders' addresses of user messages, by index
	// (origin.go); answered is how many messages the newest answered mark
	// of an earlier version covers (LegacyPending).
	origins map[int]Origin
	// headRead is set once the archived head (before base) has been read:
	// its origins are then in origins, and the head, which only grows by
	// messages held before (whose origins are there too), need not be read
	// again to look one up.
	headRead bool
	answered int
	// conv keeps this conversation in a database (db.go); nil: in files.
	conv store.Conversations
}

// Key is the session key, e.g. "slack:C1:1712.55".
func (s *Session) Key() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.Key
}

// ID changes when /new starts a new session under the same key.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.ID
}

// Tail returns the messages held in memory, oldest first: msgs[i] is
// message base+i. They are every unarchived message and at least the
// keepBefore messages before LastConsolidated, from the user message that
// opens their turn (when it is within maxTurnBack more), which covers the
// consolidator's continuity window. The slice is shared: do not modify it.
// Later appends and archives never change the part it covers.
func (s *Session) Tail() (base int, msgs []llm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base, s.msgs[:len(s.msgs):len(s.msgs)]
}

// Messages returns every message, oldest first, reading the archived ones
// that are not held in memory from the file: for tests and tools, never a
// turn (turns use Tail). It returns nil, and logs why, when that read
// fails. The slice is shared when nothing had to be read: do not modify it.
func (s *Session) Messages() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == 0 {
		return s.msgs[:len(s.msgs):len(s.msgs)]
	}
	head, err := s.readHeadLocked()
	if err != nil {
		s.logger.Error("cannot read a session's archived messages", "session", s.meta.Key, "err", err)
		return nil
	}
	return append(head, s.msgs...)
}

// Len is the number of messages.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + len(s.msgs)
}

// LastConsolidated is how many leading messages have been archived.
func (s *Session) LastConsolidated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.LastConsolidated
}

// LastSummary is the text of the last archive summary, "" if none.
func (s *Session) LastSummary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.LastSummary
}

// Audience is who can read the conversation: the audience recorded for
// it, or, when none was (a conversation from before audiences, or whose
// metadata was lost), audience.Unknown of its key, the narrowest there is.
// Its archives go to that audience's scope, so a conversation whose
// audience is not known never writes into a wider one.
func (s *Session) Audience() audience.Audience {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta.Audience.IsZero() {
		return audience.Unknown(s.meta.Key)
	}
	return s.meta.Audience
}

// RecordedAudience is the audience recorded for the conversation; ok is
// false when none was.
func (s *Session) RecordedAudience() (a audience.Audience, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.Audience, !s.meta.Audience.IsZero()
}

// SetAudience records a as the conversation's audience. It writes
// nothing itself: a new conversation costs no metadata write. The audience
// reaches the disk with the user message recorded next (AppendUser's
// origin carries it) and with every metadata write, and a load takes it
// from the metadata or else from the newest user message that names one.
// An invalid audience is refused. The caller decides what a change means
// for the messages held under the old one (the gateway sets them aside,
// archived under it, and starts afresh).
func (s *Session) SetAudience(a audience.Audience) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("session %s audience: %w", s.Key(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta.Audience = a
	return nil
}

// audienceFromOrigins recovers the audience of a conversation whose
// metadata does not record it (never written, or written before the
// audience was known) from its newest user message that names one. The
// caller holds s.mu or owns s alone.
func (s *Session) audienceFromOrigins() {
	if !s.meta.Audience.IsZero() {
		return
	}
	newest := -1
	for i, o := range s.origins {
		if i > newest && !o.Audience.IsZero() {
			newest, s.meta.Audience = i, o.Audience
		}
	}
}

// LastActive is the time of the newest message (or creation).
func (s *Session) LastActive() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.msgs); n > 0 && !s.msgs[n-1].Time.IsZero() {
		return s.msgs[n-1].Time
	}
	return s.meta.Created
}

// SetLastConsolidated records that the first n messages are archived, and
// the newest archive summary when summary is not empty.
func (s *Session) SetLastConsolidated(n int, summary string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if total := s.base + len(s.msgs); n < s.meta.LastConsolidated || n > total {
		return fmt.Errorf("session %s: last_consolidated %d outside [%d, %d]", s.meta.Key, n, s.meta.LastConsolidated, total)
	}
	prev := s.meta
	s.meta.LastConsolidated = n
	if summary != "" {
		s.meta.LastSummary = summary
		s.meta.LastSummaryAt = s.now().UTC()
	}
	base := s.baseFor(n)
	s.meta.Tail = s.markLocked(base)
	if err := s.writeMetaLocked(); err != nil {
		s.meta = prev
		return err
	}
	s.dropBeforeLocked(base)
	return nil
}

// Append records messages at the end of the session. Messages without a
// time get the current one. The lines reach the file (write(2)) before
// Append returns, so a crash of the process loses nothing appended. A
// failed append (a full disk) records none of msgs: what it wrote is cut
// off again, or, when even that fails, the next append starts on a line of
// its own, so the fragment is skipped on reload and never swallows the
// next message.
func (s *Session) Append(msgs ...llm.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	lines := make([]any, len(msgs))
	for i := range msgs {
		if msgs[i].Time.IsZero() {
			msgs[i].Time = now
		}
		lines[i] = msgs[i]
	}
	spans, err := s.writeLines(lines...)
	if err != nil {
		return err
	}
	s.msgs = append(s.msgs, msgs...)
	s.lines = append(s.lines, spans...)
	return nil
}

// writeLines appends one JSON line per value to the message file and
// returns where each landed. The caller holds s.mu.
func (s *Session) writeLines(lines ...any) ([]lineRef, error) {
	if s.conv != nil {
		return s.writeRows(lines...)
	}
	var buf bytes.Buffer
	if s.needsNewline {
		buf.WriteByte('\n')
	}
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	spans := make([]lineRef, len(lines)) // offsets within buf until written
	for i, l := range lines {
		start := buf.Len()
		if err := enc.Encode(l); err != nil {
			return nil, fmt.Errorf("encode message for session %s: %w", s.meta.Key, err)
		}
		spans[i] = lineRef{off: int64(start), sum: lineSum(buf.Bytes()[start : buf.Len()-1])}
	}
	if err := s.wakeLocked(); err != nil {
		return nil, err
	}
	if s.file == nil {
		f, err := os.OpenFile(s.prefix+".jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open session %s: %w", s.meta.Key, err)
		}
		s.file = f
	}
	fi, err := s.file.Stat()
	if err != nil {
		return nil, fmt.Errorf("append to session %s: %w", s.meta.Key, err)
	}
	var w io.Writer = s.file
	if s.wrap != nil {
		w = s.wrap(s.file)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		s.cutTornWrite(fi.Size(), err)
		return nil, fmt.Errorf("append to session %s: %w", s.meta.Key, err)
	}
	s.needsNewline = false
	for i := range spans {
		spans[i].off += fi.Size()
	}
	s.hook("session-append")
	return spans, nil
}

// cutTornWrite undoes what a failed write left after good, the file's
// length before it. The caller holds s.mu.
func (s *Session) cutTornWrite(good int64, cause error) {
	terr := s.file.Truncate(good)
	if terr == nil {
		return
	}
	s.needsNewline = true
	s.logger.Error("a failed session append may have left a fragment; the next append starts a new line",
		"session", s.meta.Key, "err", cause, "truncate_err", terr)
}

func (s *Session) writeMetaLocked() error {
	if s.conv != nil {
		return s.writeMetaRow()
	}
	if err := s.wakeLocked(); err != nil {
		return err
	}
	data, err := json.Marshal(s.meta)
	if err != nil {
		return fmt.Errorf("encode session metadata: %w", err)
	}
	if err := writeAtomic(s.prefix+".meta.json", data); err != nil {
		return fmt.Errorf("write session %s metadata: %w", s.meta.Key, err)
	}
	s.hook("session-meta")
	return nil
}

// moveAside renames the session's files to prefix and hands back the
// key's lock, which stays with the key (Rotate gives it to the fresh
// session). The session must be awake.
func (s *Session) moveAside(prefix string) (*flock.Flock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	for _, ext := range []string{".jsonl", ".meta.json"} {
		err := os.Rename(s.prefix+ext, prefix+ext)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	s.prefix = prefix
	keyLock := s.lock
	s.lock = nil
	return keyLock, nil
}

// path is the session's files' path without extension.
func (s *Session) path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prefix
}

// close closes the append handle and releases the lock; the session is of
// no further use (evicted, or the store closed).
func (s *Session) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale = true
	return s.closeLocked()
}

// writeAtomic replaces path with data through the workspace package's one
// atomic write (temp file, fsync, rename, fsync of the directory); the
// metadata stays private to its owner.
func writeAtomic(path string, data []byte) error {
	return workspace.WriteFile(path, data, 0o600)
}

// SaveID makes the session's ID survive a restart. A session's metadata
// (its ID among it) is first written by its first SetLastConsolidated, so
// until then a restart gives the same messages a new ID. History entries
// name the ID of the session generation they archive (a restart that finds
// the range already archived moves last_consolidated instead of archiving
// it twice), so the archiver calls SaveID before its first entry. It writes
// the metadata only when the file on disk does not already hold this ID.
func (s *Session) SaveID() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv != nil {
		return s.saveIDRow()
	}
	if raw, err := os.ReadFile(s.prefix + ".meta.json"); err == nil {
		var onDisk struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &onDisk) == nil && onDisk.ID == s.meta.ID {
			return nil
		}
	}
	return s.writeMetaLocked()
}

func (s *Session) hook(point string) {
	if s.afterWrite != nil {
		s.afterWrite(point)
	}
}
