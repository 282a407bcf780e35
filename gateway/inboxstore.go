package gateway

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/store"
)

// The inbox has the store's two engines: the file (inbox.go, the
// embedded engine) and a store.Inbox (the PostgreSQL engine's rows). The
// gateway talks to either through inboxRecord; the file is also a
// store.Inbox (InboxFile), for the conformance suite and the copy between
// engines.

// inboxRecord is what the gateway asks of its inbox.
type inboxRecord interface {
	accept(l inboxLine) (known bool, err error)
	answer(o session.Origin, at time.Time) error
	openLines() []inboxLine
	compact(now time.Time) error
	close() error
}

var _ inboxRecord = (*inbox)(nil)

// OpenInboxIn keeps the record of accepted messages in a store.Inbox (the
// PostgreSQL engine's), and takes over what a previous process left
// there, as OpenInbox does with a file.
func (g *Gateway) OpenInboxIn(st store.Inbox) error {
	ib := &storeInbox{st: st}
	left, err := st.Open()
	if err != nil {
		return err
	}
	g.inbox = ib
	for _, m := range left {
		l, err := lineOf(m)
		if err != nil {
			g.logger.Warn("inbox: a message's record is unreadable; it is let go", "session", m.Conversation, "err", err)
			continue
		}
		g.inboxLeft = append(g.inboxLeft, l)
	}
	return nil
}

// storeInbox is inboxRecord over a store.Inbox.
type storeInbox struct{ st store.Inbox }

func (ib *storeInbox) accept(l inboxLine) (bool, error) {
	m, err := messageOf(l)
	if err != nil {
		return false, err
	}
	return ib.st.Accept(m)
}

func (ib *storeInbox) answer(o session.Origin, at time.Time) error {
	return ib.st.Answer(o.Channel, o.MessageID, at)
}

func (ib *storeInbox) openLines() []inboxLine {
	ms, err := ib.st.Open()
	if err != nil {
		return nil
	}
	out := make([]inboxLine, 0, len(ms))
	for _, m := range ms {
		if l, err := lineOf(m); err == nil {
			out = append(out, l)
		}
	}
	return out
}

func (ib *storeInbox) compact(now time.Time) error { return ib.st.Forget(now) }

func (ib *storeInbox) close() error { return nil }

// messageOf is an inbox line as the store's record.
func messageOf(l inboxLine) (store.InboxMessage, error) {
	origin, err := json.Marshal(l.Origin)
	if err != nil {
		return store.InboxMessage{}, fmt.Errorf("encode a message's origin: %w", err)
	}
	return store.InboxMessage{Channel: l.Origin.Channel, MessageID: l.Origin.MessageID, Conversation: l.Key,
		Origin: origin, Text: l.Text, Accepted: l.Time}, nil
}

// lineOf is the store's record as an inbox line.
func lineOf(m store.InboxMessage) (inboxLine, error) {
	var o session.Origin
	if err := json.Unmarshal(m.Origin, &o); err != nil {
		return inboxLine{}, fmt.Errorf("decode a message's origin: %w", err)
	}
	return inboxLine{Key: m.Conversation, Origin: o, Text: m.Text, Time: m.Accepted}, nil
}

// InboxFile is the inbox file of the embedded engine as a store.Inbox:
// what the conformance suite and a copy between engines use. A gateway
// uses OpenInbox instead.
type InboxFile struct{ ib *inbox }

var _ store.Inbox = (*InboxFile)(nil)

// OpenInboxFile opens the inbox file at path (made when missing).
func OpenInboxFile(path string, now time.Time) (*InboxFile, error) {
	ib, _, _, err := openInbox(path, now)
	if err != nil {
		return nil, err
	}
	return &InboxFile{ib: ib}, nil
}

// Accept implements store.Inbox.
func (f *InboxFile) Accept(m store.InboxMessage) (bool, error) {
	l, err := lineOf(m)
	if err != nil {
		return false, err
	}
	return f.ib.accept(l)
}

// Answer implements store.Inbox.
func (f *InboxFile) Answer(channel, messageID string, at time.Time) error {
	return f.ib.answer(session.Origin{Channel: channel, MessageID: messageID}, at)
}

// Open implements store.Inbox.
func (f *InboxFile) Open() ([]store.InboxMessage, error) {
	var out []store.InboxMessage
	for _, l := range f.ib.openLines() {
		m, err := messageOf(l)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Forget implements store.Inbox.
func (f *InboxFile) Forget(now time.Time) error { return f.ib.compact(now) }

// Close closes the file.
func (f *InboxFile) Close() error { return f.ib.close() }
