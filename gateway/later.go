package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// A command that answers from the background (/dream: the conversation
// goes on while Dream runs) stays unanswered in the inbox until its answer
// is out, so a restart — or, with work shared, another process once this
// one is gone — runs it again rather than leaving its sender without an
// answer. With work shared, the process running it keeps the
// conversation's claim meanwhile: a conversation let go with a message
// waiting is any process's to answer, and the command would run twice.

// laterAnswers counts, by conversation, the commands being answered in
// the background.
type laterAnswers struct {
	mu   sync.Mutex
	n    map[string]int
	done chan struct{} // closed, and replaced, when one ends
}

// answerLater runs answer in the background for the command in; its
// message is recorded answered once answer returned (it sent the answer).
func (g *Gateway) answerLater(in channels.Inbound, answer func()) {
	l := &g.later
	l.mu.Lock()
	if l.n == nil {
		l.n, l.done = map[string]int{}, make(chan struct{})
	}
	l.n[in.SessionKey]++
	l.mu.Unlock()
	g.goBackground(func() {
		answer()
		g.markAnswered(in)
		l.mu.Lock()
		if l.n[in.SessionKey]--; l.n[in.SessionKey] == 0 {
			delete(l.n, in.SessionKey)
		}
		close(l.done)
		l.done = make(chan struct{})
		l.mu.Unlock()
	})
}

// pending returns how many commands of the conversation key are being
// answered in the background, and a channel closed when one ends.
func (l *laterAnswers) pending(key string) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[key], l.done
}

// holdForLater keeps w's claim while a command of its conversation is
// answered in the background: it waits for that answer, a message queued
// here, a wake from another process or the next Sweep, and reports true;
// false when there is nothing to wait for, or shutdown began, and the
// claim may go.
func (g *Gateway) holdForLater(ctx context.Context, w *worker) bool {
	n, done := g.later.pending(w.key)
	if n == 0 {
		return false
	}
	queued := make(chan struct{})
	g.mu.Lock()
	if len(w.queue) > 0 {
		g.mu.Unlock()
		return true
	}
	w.queued = queued
	g.mu.Unlock()
	t := time.NewTimer(g.share.opts.Sweep)
	defer t.Stop()
	select {
	case <-done:
	case <-queued:
	case <-g.share.waitChange():
	case <-t.C:
	case <-ctx.Done():
	case <-g.bgCtx.Done():
	}
	g.mu.Lock()
	w.queued = nil
	g.mu.Unlock()
	return ctx.Err() == nil && g.bgCtx.Err() == nil
}
