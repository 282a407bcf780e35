package gateway

import (
	"sync"

	"github.com/dreamgate/dreamgate/channels"
)

// An answer is posted at most once, whichever process sends it: the
// outbound that answers a message carries the message's answer key
// (channels.AnswerKey), from which the adapter derives each part's
// idempotency key (Discord's nonce, Slack's message metadata), and says
// whether it may have been posted before (Again): when the message's turn
// had begun before this one — the session holds it already, because a
// process that died (this one before a restart, or another that held the
// conversation) recorded it — the adapter looks for each part first.

// answering are the messages whose turn began before this one, by
// originID, until they are marked answered.
type answering struct {
	mu    sync.Mutex
	again map[string]bool
}

func (a *answering) set(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.again == nil {
		a.again = map[string]bool{}
	}
	a.again[id] = true
}

func (a *answering) is(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.again[id]
}

func (a *answering) done(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.again, id)
}

// answerOut is the outbound that answers in: its answer key, and Again
// when in's turn began before.
func (g *Gateway) answerOut(in channels.Inbound, kind, text string) channels.Outbound {
	o := channels.ReplyTo(in, kind, text)
	if recoverable(in) {
		o.Key = channels.AnswerKey(in)
		o.Again = g.answering.is(originID(originOf(in)))
	}
	return o
}
