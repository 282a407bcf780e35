package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/store"
)

// Work shared by conversation. With several processes on one store (the
// PostgreSQL engine), any of them may receive a message: Submit records
// it in the inbox as always, and a conversation's worker runs its jobs
// only while this process holds the conversation's claim. A worker that
// gets the claim first queues, in the order they were sent, the conversation's
// messages other processes received meanwhile, and before letting the
// claim go it looks for more; one that finds another process holding it
// leaves its messages to that process (they are in the inbox) and waits
// only with what is not there (a command, an idle archive is dropped). A
// loop looks, when told (another process let a conversation go or could
// not take one) and every Sweep, for conversations with messages waiting
// that no live process holds — a dead process's — and takes them, up to
// MaxConversations at once. A conversation's session is read from the
// store afresh at every claim, for another process may have answered it
// since.

// Claims is what sharing asks of the store (store.Claims).
type Claims interface {
	Claim(key string) (ok, takenOver bool, err error)
	Release(key string) error
	HeldElsewhere(key string) (bool, error)
	Waiting(key string) ([]store.InboxMessage, error)
	Claimable(platforms []string, unclaimed time.Duration, n int) ([]string, error)
	Notify(key string) error
	Wake() <-chan string
	Lost() <-chan struct{}
}

// ShareObserver is told how sharing goes, when the Observer implements it
// (metrics): a conversation taken over from a process that died, and a
// wait for a conversation another process held.
type ShareObserver interface {
	Takeover()
	ClaimWait(d time.Duration)
}

// ShareOptions configure ShareConversations.
type ShareOptions struct {
	// MaxConversations bounds the conversations this process holds at
	// once: its share; a conversation it receives beyond it is left to
	// the others (their messages wait in the inbox), so a slow or stuck
	// process does not keep what others could answer; 0 means 8.
	MaxConversations int
	// Sweep is how often it looks for conversations nobody holds
	// besides when told; 0 means 5 s. A dead process's conversations are
	// taken over within its lease and one Sweep.
	Sweep time.Duration
}

// sharing is the gateway's side of the claims.
type sharing struct {
	c    Claims
	opts ShareOptions

	mu      sync.Mutex
	held    map[string]time.Time // conversations this process holds, since
	taking  int                  // claims being taken (reserve)
	changed chan struct{}        // closed and replaced on every wake
	// takeovers and waits are counted for /healthz.
	takeovers int
	kick      chan struct{} // asks the loop to look for work now
	// leftToUs: another process left a conversation to the others and
	// this one has not yet looked for it with room (the loop's own).
	leftToUs bool
	// aside are the set-aside conversations' archives this process
	// holds (holdAsideArchive).
	aside map[string]bool
	// lost are the messages whose turn ran when this process lost its
	// claims (by originID): they are neither answered nor marked answered
	// here, until this process takes them again.
	lost map[string]bool
}

// errClaimLost ends a turn whose conversation this process lost to
// another (its claims connection ended).
var errClaimLost = errors.New("this process lost the conversation's claim during the turn")

func (s *sharing) isAbandoned(channel, messageID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost[channel+"\x00"+messageID]
}

// abandoned reports whether in's turn ran when this process lost its
// conversation.
func (g *Gateway) abandoned(in channels.Inbound) bool {
	return g.share != nil && in.MessageID != "" && g.share.isAbandoned(in.Channel, in.MessageID)
}

// ShareConversations makes this gateway one of the processes sharing a
// store's conversations (see above). Call it before Run, after the inbox
// is open in that store.
func (g *Gateway) ShareConversations(c Claims, o ShareOptions) {
	if o.MaxConversations <= 0 {
		o.MaxConversations = 8
	}
	if o.Sweep <= 0 {
		o.Sweep = 5 * time.Second
	}
	g.share = &sharing{c: c, opts: o, held: map[string]time.Time{}, changed: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// Shared is what this process holds of the shared conversations, for
// /healthz.
type Shared struct {
	// Claims are the conversations it holds and since when.
	Claims    map[string]time.Time
	Takeovers int
}

// Shared reports the conversations this process holds; ok is false when
// it shares none.
func (g *Gateway) Shared() (Shared, bool) {
	if g.share == nil {
		return Shared{}, false
	}
	s := g.share
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Shared{Claims: make(map[string]time.Time, len(s.held)), Takeovers: s.takeovers}
	for k, v := range s.held {
		out.Claims[k] = v
	}
	return out, true
}

// waitChange returns the channel closed at the next wake.
func (s *sharing) waitChange() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *sharing) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// holding counts the conversations this process holds and those whose
// claims it is taking.
func (s *sharing) holding() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held) + s.taking
}

// reserve counts a claim about to be taken against the share; false when
// the share is full. unreserve ends the count once the claim is held or
// refused.
func (s *sharing) reserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held)+s.taking >= s.opts.MaxConversations {
		return false
	}
	s.taking++
	return true
}

func (s *sharing) unreserve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taking--
}

// lookNow asks the loop to look for work at once.
func (s *sharing) lookNow() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// turnover is a worker's step between jobs when conversations are
// shared: one without the claim tries to take it (acquire); one holding
// it with nothing queued looks in the inbox for more, and lets the claim
// go when there is none.
func (g *Gateway) turnover(ctx context.Context, w *worker) {
	g.mu.Lock()
	holding, closed, unordered := w.holding, g.closed, w.unordered
	w.unordered = false
	g.mu.Unlock()
	if !holding {
		g.acquire(ctx, w)
		return
	}
	if unordered {
		g.refill(w, true)
		return
	}
	// A process shutting down finishes what it queued and takes no more.
	if !closed && (g.refill(w, false) || g.holdForLater(ctx, w)) {
		return
	}
	s := g.share
	if err := s.c.Release(w.key); err != nil {
		g.logger.Warn("could not let go of a conversation; it is another's once this process's connection ends", "session", w.key, "err", err)
	}
	s.mu.Lock()
	delete(s.held, w.key)
	s.mu.Unlock()
	g.mu.Lock()
	w.holding, w.handled = false, nil
	g.mu.Unlock()
	s.lookNow()
}

// acquire takes the conversation's claim for w. Taken, the conversation's
// session is read afresh and its waiting messages are queued before what
// w has. Held by another process, w's messages recorded in the inbox are
// left to it; the rest waits for the claim.
func (g *Gateway) acquire(ctx context.Context, w *worker) {
	s := g.share
	g.mu.Lock()
	w.sweep = false
	g.mu.Unlock()
	// A wake from here on is one the wait below must not miss.
	changed := s.waitChange()
	if !s.reserve() {
		g.decline(ctx, w, changed)
		return
	}
	lost := s.c.Lost()
	ok, takenOver, err := s.c.Claim(w.key)
	if err != nil {
		g.logger.Warn("cannot claim a conversation; trying again", "session", w.key, "err", err)
	}
	held := ok && g.holdClaim(w, lost, takenOver)
	s.unreserve() // counted as held now, or not taken
	if ok && !held {
		// Lost with the connection as it was taken; should it have been
		// taken on the next one, it is let go, not kept unknown to this
		// gateway (nobody else could take it). What waits tries again.
		if err := s.c.Release(w.key); err != nil {
			g.logger.Warn("could not let go of a conversation; it is another's once this process's connection ends", "session", w.key, "err", err)
		}
		return
	}
	if ok {
		if takenOver {
			g.logger.Info("took over a conversation a process that died held", "session", w.key)
			if o, ok := g.deps.Observer.(ShareObserver); ok {
				o.Takeover()
			}
		}
		g.deps.Sessions.Forget(w.key)
		g.refill(w, true)
		return
	}
	if err == nil && g.leaveToHolder(w) {
		return
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		g.refuseQueued(w)
		return
	}
	g.waitForClaim(ctx, w, changed)
}

// holdClaim records that w holds its conversation's claim, just taken,
// unless the connection holding the claims ended since lost was read: a
// claim taken on it is void, and claimsLost, which clears every holding
// under g.mu once told of the loss, may already have run.
func (g *Gateway) holdClaim(w *worker, lost <-chan struct{}, takenOver bool) bool {
	s := g.share
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-lost:
		return false
	default:
	}
	s.mu.Lock()
	s.held[w.key] = g.now()
	if takenOver {
		s.takeovers++
	}
	s.mu.Unlock()
	w.holding, w.handled = true, nil
	return true
}

// refuseQueued answers what a worker still waits to run when the process
// shuts down without the conversation's claim: a message in the inbox is
// left to the process that claims it next, anything else is refused as
// at shutdown.
func (g *Gateway) refuseQueued(w *worker) {
	g.mu.Lock()
	queue := w.queue
	w.queue = nil
	g.mu.Unlock()
	for _, j := range queue {
		res := Result{}
		if !j.shared && j.task == nil {
			res = g.refuseAtShutdown(j.in)
		}
		if j.done != nil {
			j.done <- res
		}
	}
}

// decline leaves a conversation this process received to the others
// while it holds its share (MaxConversations): its messages wait in the
// inbox, and the others are told to look at once; what is not there (a
// command) waits for room.
func (g *Gateway) decline(ctx context.Context, w *worker, changed <-chan struct{}) {
	g.mu.Lock()
	before := len(w.queue)
	g.mu.Unlock()
	empty := g.leaveToHolder(w)
	g.mu.Lock()
	left := before - len(w.queue)
	g.mu.Unlock()
	if left > 0 {
		if err := g.share.c.Notify(""); err != nil {
			g.logger.Warn("cannot tell the other processes of a conversation left to them", "session", w.key, "err", err)
		}
	}
	if !empty {
		g.waitForClaim(ctx, w, changed)
	}
}

// leaveToHolder drops w's jobs that another process holding the
// conversation answers from the inbox (and idle tasks, which are that
// process's too); it reports whether nothing is left to wait with.
func (g *Gateway) leaveToHolder(w *worker) bool {
	g.mu.Lock()
	var left, kept []job
	for _, j := range w.queue {
		if j.shared || j.task != nil {
			left = append(left, j)
		} else {
			kept = append(kept, j)
		}
	}
	w.queue = kept
	g.mu.Unlock()
	for _, j := range left {
		if j.done != nil {
			j.done <- Result{}
		}
	}
	return len(kept) == 0
}

// waitForClaim waits until the claim may be free: another process let a
// conversation go since changed was read (before the claim was tried:
// a release between the try and this wait is not missed), or the next
// Sweep.
func (g *Gateway) waitForClaim(ctx context.Context, w *worker, changed <-chan struct{}) {
	start := g.now()
	t := time.NewTimer(g.share.opts.Sweep)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
	if o, ok := g.deps.Observer.(ShareObserver); ok {
		o.ClaimWait(g.now().Sub(start))
	}
}

// refill queues the conversation's messages waiting in the inbox that w
// has not queued or handled, in the order they were sent: with first (a fresh
// claim, or messages queued under it since), w's own messages take their
// places among them; otherwise they follow w's queue. It reports whether
// it queued any.
func (g *Gateway) refill(w *worker, first bool) bool {
	msgs, err := g.share.c.Waiting(w.key)
	if err != nil {
		g.logger.Warn("cannot read a conversation's waiting messages", "session", w.key, "err", err)
		return false
	}
	now := g.now()
	g.mu.Lock()
	known := map[string]bool{}
	for _, j := range w.queue {
		known[originID(originOf(j.in))] = true
	}
	// At a fresh claim the queue's own messages take their place among
	// the waiting ones, in the order they were sent; what is not in the inbox
	// (commands, idle tasks) follows.
	queued := map[string]job{}
	var rest []job
	for _, j := range w.queue {
		if first && j.shared {
			queued[originID(originOf(j.in))] = j
		} else {
			rest = append(rest, j)
		}
	}
	var jobs []job
	added := 0
	for _, m := range msgs {
		l, err := lineOf(m)
		if err != nil || g.channels[l.Origin.Channel] == nil || w.handled[l.id()] {
			continue
		}
		if j, ok := queued[l.id()]; ok {
			jobs = append(jobs, j)
			delete(queued, l.id())
			continue
		}
		if known[l.id()] {
			continue
		}
		g.share.mu.Lock()
		delete(g.share.lost, l.id()) // this process answers it after all
		g.share.mu.Unlock()
		jobs = append(jobs, g.pendingJob(l, now))
		added++
	}
	if first {
		w.queue = append(jobs, rest...)
	} else {
		w.queue = append(rest, jobs...)
	}
	g.mu.Unlock()
	// What is left of queued is not among the open messages: answered
	// meanwhile (found here waiting before Submit queued it, or answered
	// by the process that held the conversation before), or accepted
	// after they were read. Either way the inbox is its record: the first
	// must not be answered again, and the next look finds the second.
	for _, j := range queued {
		if j.done != nil {
			j.done <- Result{}
		}
	}
	return added > 0
}

// pendingJob is the job that answers a message of the inbox this process
// did not receive itself (or a restart's): decided when it runs, as at a
// start (answerPending's rules), since its session may hold it already.
func (g *Gateway) pendingJob(l inboxLine, now time.Time) job {
	in := inboundOf(l.Key, l.Origin, l.Text, l.Time)
	return job{in: in, shared: true, task: func(ctx context.Context) {
		g.answerWaiting(ctx, in, now)
	}}
}

// answerWaiting answers one message taken from the inbox: one a later
// turn followed is marked answered, a recorded reply is sent again, a
// message within AnswerPending gets a turn, an older one is asked for
// again, and one past resendWindow is let go.
func (g *Gateway) answerWaiting(ctx context.Context, in channels.Inbound, now time.Time) {
	age := now.Sub(in.Time)
	if age > resendWindow {
		g.logger.Info("letting go of a message left unanswered for long", "session", in.SessionKey, "age", age.Round(time.Second))
		g.markAnswered(in)
		return
	}
	if pc := g.recordedCommand(in); pc != nil {
		if g.cfg.AnswerPending > 0 && age > g.cfg.AnswerPending {
			g.finishPending(ctx, in, channels.KindError, restartedNotice)
		} else {
			g.runCommand(ctx, in, pc)
		}
		return
	}
	sess, err := g.deps.Sessions.Get(in.SessionKey)
	if err != nil {
		g.logger.Warn("cannot open a session to answer a waiting message", "session", in.SessionKey, "err", err)
		return
	}
	r := sess.Recorded(originOf(in), in.Time)
	switch {
	case r.Held && !r.Newest:
		g.markAnswered(in) // a later turn followed: it was answered
	case r.Reply != "":
		g.finishPending(ctx, in, channels.KindReply, r.Reply)
	case g.cfg.AnswerPending > 0 && age > g.cfg.AnswerPending:
		g.finishPending(ctx, in, channels.KindError, restartedNotice)
	default:
		g.observedTurn(ctx, in)
	}
}

// holdAsideArchive takes, when conversations are shared, the claim of a
// set-aside conversation's archive (a conversation /new set aside, by key
// and generation), so that one process archives it; ok is false when
// another does (or this process does already). release lets it go.
func (g *Gateway) holdAsideArchive(key, id string) (release func(), ok bool) {
	s := g.share
	if s == nil {
		return func() {}, true
	}
	name := "aside " + key + " " + id
	s.mu.Lock()
	if s.aside[name] {
		s.mu.Unlock()
		return nil, false
	}
	s.mu.Unlock()
	got, _, err := s.c.Claim(name)
	if err != nil || !got {
		return nil, false
	}
	s.mu.Lock()
	if s.aside == nil {
		s.aside = map[string]bool{}
	}
	s.aside[name] = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.aside, name)
		s.mu.Unlock()
		if err := s.c.Release(name); err != nil {
			g.logger.Warn("could not let go of a set-aside conversation's archive", "session", key, "err", err)
		}
	}, true
}

// holdAside takes the archive of a set-aside conversation the idle scan
// found (holdAsideArchive) and, when shared, reads it again: another
// process may have archived it since it was loaded.
func (g *Gateway) holdAside(sess *session.Session, f session.SetAside) (*session.Session, func(), bool) {
	release, ok := g.holdAsideArchive(f.Key, f.ID)
	if !ok || g.share == nil {
		return sess, release, ok
	}
	g.deps.Sessions.ForgetSetAside(sess)
	fresh, err := g.deps.Sessions.OpenSetAside(f)
	if err != nil || fresh.LastConsolidated() >= fresh.Len() {
		release()
		return nil, nil, false
	}
	return fresh, release, true
}
