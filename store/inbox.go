package store

import "time"

// InboxMessage is one platform message from its acceptance to its answer:
// the record that lets a restart answer what a crash left unanswered, and
// that keeps a platform's second delivery of a message from being answered
// twice.
type InboxMessage struct {
	// Channel and MessageID name the message on its platform: the inbox
	// holds each once.
	Channel, MessageID string
	// Conversation is the session key it belongs to.
	Conversation string
	// Origin is where it came from (gateway/session's Origin, as JSON).
	Origin []byte
	// Text is what it said; Accepted when it was accepted.
	Text     string
	Accepted time.Time
}

// KeepAnswered is how long an inbox remembers a message it answered, so
// that a platform delivering it again (a killed process could not ack it)
// is not answered twice. Slack retries an unacked envelope for a few
// minutes; Discord does not deliver again across a restart.
const KeepAnswered = time.Hour

// Inbox is the record of the platform messages one gateway process (one
// Discord shard) accepted. Times are the caller's clock.
type Inbox interface {
	// Accept records m. known reports a message accepted before that is
	// open, or was answered within KeepAnswered: nothing is recorded then.
	Accept(m InboxMessage) (known bool, err error)
	// Answer marks the message answered at at; one that is not open
	// changes nothing.
	Answer(channel, messageID string, at time.Time) error
	// Open returns the messages accepted and not answered, in the order
	// they were accepted.
	Open() ([]InboxMessage, error)
	// Forget drops the answers older than KeepAnswered at now.
	Forget(now time.Time) error
}
