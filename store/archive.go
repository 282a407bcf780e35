package store

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Entry is one archive entry: a line of memory/history.jsonl in the
// embedded engine, a row in PostgreSQL.
type Entry struct {
	// Cursor numbers the entry; cursors are strictly increasing in the
	// order entries are appended, and never handed out twice, also across
	// compaction.
	Cursor int `json:"cursor"`
	// Timestamp is local time, "YYYY-MM-DD HH:MM".
	Timestamp string `json:"timestamp"`
	// Content is the archived text: "- fact" lines or a "[RAW] N messages" dump.
	Content string `json:"content"`
	// SessionKey names the conversation the entry came from; old nanobot
	// entries have none.
	SessionKey string `json:"session_key,omitempty"`
	// SessionID and Range are dreamgate's own fields, written after
	// nanobot's four and only on archive entries made from session
	// messages: the session generation (its id, new at /new) and the
	// messages archived, Range[0] up to but not including Range[1]. See
	// Source. Entries without them (nanobot's, Dream's records, older
	// ones) have "" and [0, 0].
	SessionID string `json:"session_id,omitempty"`
	Range     [2]int `json:"range,omitzero"`
	// Scope is the memory scope of the conversation the entry came from,
	// written last and only when it is not the default scope: an entry
	// without one (nanobot's, an operator's, any written before scopes)
	// belongs to the default scope, the workspace root's files. Dream
	// reads an entry only into its own scope's files.
	Scope audience.Scope `json:"scope,omitempty"`
}

// TimestampLayout is the archive's timestamp format (minute precision).
const TimestampLayout = "2006-01-02 15:04"

// MaxEntryChars is the hard cap an append applies to any entry (in
// characters, Unicode code points, as nanobot counts them). Writers cap
// their own entries more tightly.
const MaxEntryChars = 64000

// TruncatedSuffix marks content cut to a cap (nanobot's mark): an append's
// MaxEntryChars and the archive's own, tighter caps.
const TruncatedSuffix = "\n... (truncated)"

// Source names the session messages an archive entry was made from. It is
// what makes an archive idempotent across crashes: a process killed after
// the entry was appended but before the session recorded it finds, on
// restart, that the range starting at the session's last_consolidated is
// already in the archive, and moves last_consolidated instead of archiving
// the same messages again (see Archive.ArchivedAt).
type Source struct {
	// SessionID identifies the session generation: /new starts a fresh
	// conversation under the same key whose message indexes begin at 0
	// again, so the key alone cannot tell its ranges from the old one's.
	SessionID string
	// From and To are the message indexes archived: From up to, not
	// including, To.
	From, To int
}

// Valid reports whether src names messages: a session id and a
// non-empty range.
func (src Source) Valid() bool {
	return src.SessionID != "" && src.From >= 0 && src.To > src.From
}

// Source returns the session messages e was archived from; ok is false for
// entries that do not say (nanobot's, Dream's own records, older ones).
func (e Entry) Source() (src Source, ok bool) {
	if e.SessionID == "" {
		return Source{}, false
	}
	return Source{SessionID: e.SessionID, From: e.Range[0], To: e.Range[1]}, true
}

// SetSource records src on e (nothing for a source without a session id).
func (e *Entry) SetSource(src Source) {
	if src.SessionID == "" {
		return
	}
	e.SessionID, e.Range = src.SessionID, [2]int{src.From, src.To}
}

// Backlog is what one memory scope has not read: its entries after its
// cursor.
type Backlog struct {
	Scope audience.Scope
	// First is the cursor of the first of them; Count how many there are.
	First, Count int
}

// EntryContent is what an append stores of content, the same in every
// engine: trailing whitespace trimmed (as Python's str.rstrip does), and
// cut to MaxEntryChars characters with TruncatedSuffix; cut reports the
// cut, which the engine logs once.
func EntryContent(content string) (stored string, cut bool) {
	content = strings.TrimRightFunc(content, unicode.IsSpace)
	return textcut.Chars(content, MaxEntryChars, TruncatedSuffix)
}

// CheckScope refuses, before anything is written, a scope an entry may
// not name: an entry must never land in a scope, the default one least of
// all, that its conversation did not come from.
func CheckScope(scope audience.Scope) error {
	if _, err := audience.ParseScope(string(scope)); err != nil {
		return fmt.Errorf("append history entry: %w", err)
	}
	return nil
}

// The archive's contracts. Every engine's archive satisfies all three
// (History); its consumers declare the parts they use (dream.History,
// consolidator.History). Errors mean the archive could not be read or
// written; a damaged record an engine can skip (a torn line) is skipped,
// with a warning, not an error.

// Archive is the archive's writing side.
type Archive interface {
	// AppendIn adds an entry of a memory scope with the next cursor and
	// returns it once it is durable. A scope audience.ParseScope refuses
	// is an error, and nothing is written.
	AppendIn(scope audience.Scope, content, sessionKey string) (Entry, error)
	// AppendFrom is AppendIn for an entry made from session messages; it
	// also records src, which ArchivedAt looks up. An invalid src is an
	// error.
	AppendFrom(scope audience.Scope, content, sessionKey string, src Source) (Entry, error)
	// ArchivedAt returns the newest entry of session generation
	// (sessionKey, sessionID) when its range starts at from: those
	// messages are already archived.
	ArchivedAt(sessionKey, sessionID string, from int) (Entry, bool, error)
	// LastCursor is the highest cursor handed out so far (0 when none);
	// the next append gets a higher one.
	LastCursor() (int, error)
	// Compact drops the oldest entries already consumed by Dream while
	// more than maxEntries remain, and returns how many it dropped. It
	// never drops an entry above the Dream cursor; maxEntries <= 0 means
	// no limit.
	Compact(maxEntries int) (dropped int, err error)
}

// ArchiveReader reads the archive, oldest first (in cursor order).
type ArchiveReader interface {
	// Since returns the entries with a cursor above cursor, at most limit
	// of them (0 = all), whatever their scope.
	Since(cursor, limit int) ([]Entry, error)
	// SinceIn is Since for the entries of one memory scope.
	SinceIn(scope audience.Scope, cursor, limit int) ([]Entry, error)
	// UnreadLast returns the session's last n entries above the Dream
	// cursor (0: all of them).
	UnreadLast(sessionKey string, n int) ([]Entry, error)
	// Entries returns the entries whose cursors are listed; a cursor no
	// entry has (compacted away, never written) is left out.
	Entries(cursors ...int) ([]Entry, error)
	// Len is the number of entries held.
	Len() (int, error)
	// Backlogs lists the scopes with entries above their cursor (above
	// after for a scope missing from cursors), the oldest such entry
	// first, and the highest cursor the archive held when it looked.
	Backlogs(after int, cursors map[audience.Scope]int) ([]Backlog, int, error)
}

// DreamCursor is the frontier Dream has consumed: memory/.dream_cursor in
// the embedded engine.
type DreamCursor interface {
	// DreamCursor is the highest cursor Dream has consumed (0 when none).
	DreamCursor() (int, error)
	// SetDreamCursor records n as consumed, durably, before returning nil.
	SetDreamCursor(n int) error
}

// History is the whole archive, as cmd hands it to its consumers.
type History interface {
	Archive
	ArchiveReader
	DreamCursor
}
