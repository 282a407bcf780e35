package store

import "time"

// Conversation is one generation of a conversation: the messages of a
// session key from its start or its last /new, and its metadata record.
// The embedded engine keeps it as gateway/session's files (a message file
// of JSON lines and a metadata file); the PostgreSQL engine as rows, each
// line and the metadata in the same JSON, so that both are read by the
// same code.
type Conversation struct {
	Key string
	// ID names the generation (new at /new).
	ID string
	// Live: the key's current generation; false once /new set it aside.
	Live bool
	// Meta is the metadata record (JSON), nil until one is written.
	Meta []byte
	// Lines is how many lines it holds; Modified when the last was
	// written (or the generation made).
	Lines    int
	Modified time.Time
}

// Conversations is where a database engine keeps conversations: what
// gateway/session asks of one. Lines are numbered from 0 within a
// generation; a key has at most one live generation. Errors mean the
// record could not be read or written.
type Conversations interface {
	ConversationReader
	ConversationWriter
}

// ConversationReader reads conversations.
type ConversationReader interface {
	// Live returns the key's live generation; ok is false when it has
	// none (nothing was written under the key, or only set aside).
	Live(key string) (c Conversation, ok bool, err error)
	// Generation returns one generation, live or set aside.
	Generation(key, id string) (c Conversation, ok bool, err error)
	// Lines returns the generation's lines from index from up to, not
	// including, to (to <= 0: to the end), in order.
	Lines(key, id string, from, to int) ([][]byte, error)
	// List returns every generation (Meta included, no lines).
	List() ([]Conversation, error)
}

// ConversationWriter writes conversations.
type ConversationWriter interface {
	// Append stores lines as the generation's lines at..at+len-1, making
	// the generation (live) when it is new. A line already stored at one
	// of those indexes is an error, and nothing is stored.
	Append(key, id string, at int, lines [][]byte) error
	// PutMeta replaces the generation's metadata record, making the
	// generation (live) when it is new.
	PutMeta(key, id string, meta []byte) error
	// SetAside makes the generation no longer its key's live one.
	SetAside(key, id string) error
}
