package gateway

import (
	"context"
	"slices"
	"strings"
	"time"
)

// The sharing loop (share.go): it looks for work nobody holds, passes on
// what other processes say (a conversation let go, one left to the
// others, a /stop), and lets everything go when this process loses its
// claims.

// shareLoop looks for conversations nobody holds when told and every
// Sweep, and lets go of everything when the claims are lost.
func (g *Gateway) shareLoop(ctx context.Context) {
	s := g.share
	t := time.NewTicker(s.opts.Sweep)
	defer t.Stop()
	lost := s.c.Lost()
	look, now := true, false
	for {
		if look {
			g.lookForWork(now)
		}
		look, now = true, false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		case key := <-s.c.Wake():
			if conv, ok := strings.CutPrefix(key, stopPrefix); ok {
				g.stopHere(conv)
				look = false
				continue
			}
			// Another process let a conversation go: whoever waits for
			// it tries again. Work nobody holds is looked for on the
			// timer, after this process lets one go, and at once when
			// another process left a conversation it received (key "").
			s.wakeAll()
			look, now = key == "", key == ""
		case <-lost:
			// The next loss is watched for before this one is handled,
			// so one that comes meanwhile is not missed.
			lost = s.c.Lost()
			g.claimsLost()
		}
	}
}

// lookForWork starts a worker for each conversation with messages
// waiting that no live process holds, within MaxConversations; now looks
// also at those nobody claimed yet, however young.
func (g *Gateway) lookForWork(now bool) {
	s := g.share
	// Told that a conversation was left to the others while this process
	// had no room, it looks without the grace until it took what was
	// left: the one that left it may be stuck, and answers nothing.
	now = now || s.leftToUs
	room := s.opts.MaxConversations - s.holding()
	if room <= 0 {
		s.leftToUs = now
		return
	}
	g.mu.Lock()
	var platforms []string
	for name := range g.channels {
		platforms = append(platforms, name)
	}
	g.mu.Unlock()
	slices.Sort(platforms)
	// A conversation nobody claimed yet is its receiver's for two sweeps
	// (at least a second) before the others look at it, unless its
	// receiver said it leaves it to them (now).
	grace := max(2*s.opts.Sweep, time.Second)
	if now {
		grace = 0
	}
	keys, err := s.c.Claimable(platforms, grace, room)
	if err != nil {
		g.logger.Warn("cannot look for conversations to answer", "err", err)
		return
	}
	// All there was fitted: nothing left waits without a claim.
	s.leftToUs = now && len(keys) == room
	for _, key := range keys {
		g.startSweep(key)
	}
}

// startSweep starts a worker for key that takes its claim with nothing
// queued yet, unless one runs already.
func (g *Gateway) startSweep(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.workers[key] != nil {
		return
	}
	w := &worker{key: key, running: true, sweep: true}
	g.workers[key] = w
	g.workerWG.Add(1)
	go g.runWorker(w)
}

// stopPrefix marks a notification asking the process holding a
// conversation to stop (a /stop another process received).
const stopPrefix = "stop "

// stopElsewhere asks the process holding key, when another does, to stop
// its turn and drop what waits (a /stop received here); it reports
// whether another process holds it.
func (g *Gateway) stopElsewhere(key string) bool {
	s := g.share
	if s == nil {
		return false
	}
	s.mu.Lock()
	_, mine := s.held[key]
	s.mu.Unlock()
	if mine {
		return false
	}
	// Looked at, not taken: a claim taken and let go here would let go of
	// the one this process's worker may be taking at this moment.
	elsewhere, err := s.c.HeldElsewhere(key)
	if err != nil {
		g.logger.Warn("/stop: cannot tell whether another process answers this conversation", "session", key, "err", err)
		return false
	}
	if !elsewhere {
		return false // nothing runs anywhere
	}
	if err := s.c.Notify(stopPrefix + key); err != nil {
		g.logger.Warn("/stop: cannot reach the process answering this conversation", "session", key, "err", err)
		return false
	}
	return true
}

// stopHere does what /stop does, for a /stop another process received:
// when this process holds key, its running turn is cancelled and the
// messages waiting — queued here, or in the inbox — are answered that
// they were stopped.
func (g *Gateway) stopHere(key string) {
	g.share.mu.Lock()
	_, mine := g.share.held[key]
	g.share.mu.Unlock()
	if !mine {
		return
	}
	dropped := g.dropQueued(key)
	if msgs, err := g.share.c.Waiting(key); err == nil {
		g.mu.Lock()
		running := ""
		if w := g.workers[key]; w != nil && w.cancel != nil {
			running = originID(originOf(w.current))
		}
		g.mu.Unlock()
		for _, m := range msgs {
			if l, err := lineOf(m); err == nil && l.id() != running && !slices.ContainsFunc(dropped, func(j job) bool { return originID(originOf(j.in)) == l.id() }) {
				dropped = append(dropped, job{in: inboundOf(l.Key, l.Origin, l.Text, l.Time)})
			}
		}
	}
	g.refuseStopped(dropped)
	g.cancelRunning(key)
	g.logger.Info("stopped on a /stop another process received", "session", key, "dropped", len(dropped))
}

// claimsLost lets go of every conversation when the connection holding
// the claims ended: their turns are stopped and their waiting messages
// left in the inbox, for whichever process claims them next.
func (g *Gateway) claimsLost() {
	s := g.share
	g.mu.Lock()
	defer g.mu.Unlock()
	s.mu.Lock()
	clear(s.held)
	s.mu.Unlock()
	for _, w := range g.workers {
		if !w.holding {
			continue
		}
		w.holding, w.handled = false, nil
		if w.cancel != nil {
			s.mu.Lock()
			if s.lost == nil {
				s.lost = map[string]bool{}
			}
			s.lost[originID(originOf(w.current))] = true
			s.mu.Unlock()
			w.cancel()
		}
	}
	g.logger.Warn("this process lost its claims on the conversations it was answering; their turns were stopped and another process may answer them")
}
