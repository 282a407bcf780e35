package store

import (
	"context"
	"errors"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// The recall index: total recall's full-text index of what memory no
// longer shows (archive entries, conversations' archived messages, cold
// memory lines), each document in one memory scope. What is indexed, in
// which scope, and how a search ranks what it finds are package recall's
// rules, written once; an engine keeps the documents, finds them by their
// words within one scope at a time, and keeps the marks that say how far
// the index has read its sources. The embedded engine is a SQLite file in
// the state directory (recall.IndexFiles); PostgreSQL's is tables every
// process shares (postgres.Recall).

// RecallKind is what a document is.
type RecallKind int

// The kinds of document.
const (
	// RecallHistory is an archive entry.
	RecallHistory RecallKind = 1
	// RecallMessage is a conversation's archived message.
	RecallMessage RecallKind = 2
	// RecallCold is a line of a scope's cold memory.
	RecallCold RecallKind = 3
)

// RecallDoc is one document of the recall index.
type RecallDoc struct {
	Kind RecallKind
	// At is when it was said, in unix seconds (0: unknown).
	At int64
	// Conversation is the session key it was said in ("" when none).
	Conversation string
	// Pos is its place: an entry's cursor, a message's index in its
	// conversation, a cold-memory line's number.
	Pos int
	// Who said it ("" for entries and cold lines); a search finds the
	// name as it finds the text's words ("what did Ana say about …").
	Who string
	// Text is what was said.
	Text string
}

// RecallHit is a document a search found.
type RecallHit struct {
	ID int64
	// Order places the document in time, across scopes: the larger, the
	// newer; documents of one minute (RecallMinute) in the order they were
	// added.
	Order int64
}

// RecallRow is a document read back, with its scope.
type RecallRow struct {
	ID    int64
	Scope audience.Scope
	RecallDoc
}

// RecallIndex is the recall index's store. Its methods' errors mean the
// index could not be read or written; ErrRecallUnusable says the index
// must be rebuilt (Reset) before it can be.
type RecallIndex interface {
	// Count is how many documents scope holds (0 when none).
	Count(ctx context.Context, scope audience.Scope) (int, error)
	// Match returns the newest documents of scope holding every one of
	// terms (words as recall.Terms makes them: lowercase runs of letters
	// and digits), newest first, at most limit. A term matches its word
	// in any case and without diacritics, and the word's inflections
	// ("salaries" finds "salary"), never a longer word: a code such as
	// p0009 finds itself only. within > 0 bounds the time Match takes:
	// out of time, it returns the documents it found so far (maybe none)
	// and no error.
	Match(ctx context.Context, scope audience.Scope, terms []string, limit int, within time.Duration) ([]RecallHit, error)
	// Read returns the documents ids name, in that order; an id no
	// document has is left out.
	Read(ctx context.Context, ids []int64) ([]RecallRow, error)
	// Mark returns the committed value of the mark name ("" when none).
	Mark(ctx context.Context, name string) (string, error)
	// Update runs fn as the index's one writer, across every process on
	// the same index: while another writer works it returns ErrRecallBusy
	// at once, without calling fn. What fn writes is committed at each
	// RecallWriter.Commit and when fn returns nil; when fn returns an
	// error, what it wrote since its last Commit is dropped and the error
	// returned.
	Update(ctx context.Context, fn func(RecallWriter) error) error
	// Reset empties the index (every document and mark) once no writer
	// works on it, waiting for one within ctx: for a change the marks
	// cannot follow (entries moved to another scope), and to rebuild an
	// unusable index.
	Reset(ctx context.Context) error
}

// RecallWriter writes the index within RecallIndex.Update; its reads see
// what it wrote.
type RecallWriter interface {
	// Add indexes doc in scope (its text cut to RecallMaxText bytes).
	Add(scope audience.Scope, doc RecallDoc) error
	// Drop removes scope's documents of kind.
	Drop(scope audience.Scope, kind RecallKind) error
	// Marks returns the marks whose names begin with prefix, by name.
	Marks(prefix string) (map[string]string, error)
	// SetMark records a mark; the value "" removes it.
	SetMark(name, value string) error
	// Commit makes what was written so far durable: documents and the
	// marks that say they were read are committed together, so an update
	// killed part way resumes after its last commit.
	Commit() error
}

// RecallMaxText caps the text kept of one document, in bytes (never
// inside a character): the longest archive entries are raw dumps of
// messages that are indexed one by one anyway.
const RecallMaxText = 16 << 10

// ErrRecallBusy is returned by RecallIndex.Update while another writer
// (another process, or another call) works on the index.
var ErrRecallBusy = errors.New("recall index being updated elsewhere")

// ErrRecallUnusable marks an index to rebuild: damaged, of another
// version, or built from sources it no longer matches.
var ErrRecallUnusable = errors.New("recall index unusable")

// Order of documents in time (RecallHit.Order): the minute a document was
// said, counted from RecallEpoch, then a slot of RecallSlotBits bits
// numbering the minute's documents in the order they were added.
const (
	RecallSlotBits = 15
	// RecallMaxMinute is the last minute an Order can hold (2083, with
	// 25 bits of minutes: the embedded engine keeps a scope's id above
	// them in a 64-bit row id).
	RecallMaxMinute = 1<<(40-RecallSlotBits) - 1
)

// RecallEpoch is the first minute of RecallMinute, in unix seconds.
var RecallEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// RecallMinute is the minute of a document said at unix time at: counted
// from RecallEpoch, clamped to [0, RecallMaxMinute]; an unknown time (0)
// is minute 0.
func RecallMinute(at int64) int64 {
	if at <= RecallEpoch {
		return 0
	}
	return min((at-RecallEpoch)/60, RecallMaxMinute)
}
