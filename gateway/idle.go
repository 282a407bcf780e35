package gateway

import (
	"context"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// evictAfter is how long a fully archived conversation stays in memory
// after its last message.
const evictAfter = time.Hour

// idleLoop archives the tail of sessions that went quiet, so short chats
// also reach Dream (nanobot #3973: without it Dream starves), and lets go of
// conversations that have been quiet for long.
func (g *Gateway) idleLoop(ctx context.Context) {
	every := time.Minute
	if g.cfg.IdleCompactAfter > 0 {
		every = min(every, max(g.cfg.IdleCompactAfter/4, time.Second))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if g.cfg.IdleCompactAfter > 0 {
				g.compactIdle()
			}
			g.evictIdle()
			g.closeIdleFiles()
		}
	}
}

// compactIdle queues an archive job for every loaded session idle for
// IdleCompactAfter with unarchived messages. The job runs in the session's
// worker, so it never overlaps a turn of that session.
func (g *Gateway) compactIdle() {
	cutoff := g.now().Add(-g.cfg.IdleCompactAfter)
	for _, s := range g.deps.Sessions.Loaded() {
		if s.LastConsolidated() >= s.Len() || s.LastActive().After(cutoff) || g.queued(s.Key()) > 0 {
			continue
		}
		sess := s
		err := g.enqueue(job{
			in: channels.Inbound{SessionKey: sess.Key()},
			task: func(ctx context.Context) {
				// Re-check inside the worker: a message may have arrived.
				if sess.LastConsolidated() >= sess.Len() || sess.LastActive().After(g.now().Add(-g.cfg.IdleCompactAfter)) {
					return
				}
				if _, err := g.deps.Consolidator.ArchiveTail(ctx, sess); err != nil {
					g.logger.Error("idle archive failed", "session", sess.Key(), "err", err)
				}
			},
		})
		if err != nil {
			g.logger.Debug("idle archive not queued", "session", s.Key(), "err", err)
		}
	}
}

// evictIdle drops from memory the sessions quiet for evictAfter whose
// messages are all archived (or that idle compaction does not cover); they
// are read from disk again when they next speak.
func (g *Gateway) evictIdle() {
	cutoff := g.now().Add(-max(evictAfter, 2*g.cfg.IdleCompactAfter))
	for _, s := range g.deps.Sessions.Loaded() {
		archived := s.LastConsolidated() >= s.Len() || g.cfg.IdleCompactAfter == 0
		if !archived || s.LastActive().After(cutoff) || g.queued(s.Key()) > 0 {
			continue
		}
		g.deps.Sessions.Evict(s)
	}
}
