package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
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
	// Conversations on disk that no process archived (a `chat --session`
	// run, a gateway stopped before their idle archive) are found at start
	// and then on every tick.
	checked := map[string]time.Time{}
	if g.cfg.IdleCompactAfter > 0 {
		g.compactOnDisk(checked)
	}
	asideChecked := &seenSet{m: map[string]bool{}}
	g.archiveSetAside(asideChecked)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if g.cfg.IdleCompactAfter > 0 {
				g.compactIdle()
				g.compactOnDisk(checked)
			}
			g.archiveSetAside(asideChecked)
			g.evictIdle()
			g.releaseIdle()
		}
	}
}

// diskLoadsPerPass bounds how many conversations one pass over the
// sessions directory loads: a first start beside thousands of old files
// works through them a few per tick instead of all at once.
const diskLoadsPerPass = 4

// compactOnDisk queues an idle archive for conversations on disk that are
// not loaded and whose file has been quiet for IdleCompactAfter. Loading
// one is the only way to see whether it has an unarchived tail, so checked
// remembers each file's modification time once looked at: a file is looked
// at again only after it was written to. The archive runs as a job in the
// session's worker, as compactIdle's does, so it never overlaps a turn or
// another archive of that session; the session is let go of afterwards
// (releaseDiskLoad), or kept for compactIdle to retry when the archive
// failed. A session another process holds is that process's to archive.
func (g *Gateway) compactOnDisk(checked map[string]time.Time) {
	files, err := g.deps.Sessions.ListOnDisk()
	if err != nil {
		g.logger.Warn("idle archive: cannot list the sessions on disk", "err", err)
		return
	}
	cutoff := g.now().Add(-g.cfg.IdleCompactAfter)
	loads := 0
	for _, f := range files {
		if loads == diskLoadsPerPass {
			return
		}
		if f.Modified.After(cutoff) || checked[f.Key].Equal(f.Modified) ||
			g.deps.Sessions.IsLoaded(f.Key) || g.queued(f.Key) > 0 {
			continue
		}
		checked[f.Key] = f.Modified
		loads++
		key := f.Key
		err := g.enqueue(job{
			in: channels.Inbound{SessionKey: key},
			task: func(ctx context.Context) {
				sess, err := g.deps.Sessions.Get(key)
				if _, locked := sessionLocked(err); locked {
					// The process that holds it archives it.
					g.logger.Debug("idle archive: session held by another process", "session", key, "err", err)
					return
				} else if err != nil {
					g.logger.Warn("idle archive: cannot load a session from disk", "session", key, "err", err)
					return
				}
				if sess.LastConsolidated() >= sess.Len() || sess.LastActive().After(g.now().Add(-g.cfg.IdleCompactAfter)) {
					g.releaseDiskLoad(sess)
					return
				}
				g.logger.Info("idle archive of a session left unarchived on disk", "session", key, "messages", sess.Len()-sess.LastConsolidated())
				if _, err := g.deps.Consolidator.ArchiveTail(ctx, sess); err != nil {
					// Loaded now: compactIdle tries again on a later tick.
					g.logger.Error("idle archive failed", "session", key, "err", err)
					return
				}
				g.releaseDiskLoad(sess)
			},
		})
		if err != nil {
			g.logger.Debug("idle archive not queued", "session", key, "err", err)
		}
	}
}

// releaseDiskLoad lets go of a session compactOnDisk loaded only to look
// at it, at once rather than after evictAfter: loading took the session's
// lock, and a `chat --session` of that conversation must not be refused
// for an hour because the gateway looked at it. It runs in the session's
// worker, so no turn of it is under way; a turn queued behind loads it
// again.
func (g *Gateway) releaseDiskLoad(sess *session.Session) {
	g.deps.Sessions.Evict(sess)
}

// compactIdle queues an archive job for every loaded session idle for
// IdleCompactAfter with unarchived messages. The job runs in the session's
// worker, so it never overlaps a turn of that session, and gets the
// session again there: the one listed may have been let go of and changed
// by another process meanwhile.
func (g *Gateway) compactIdle() {
	cutoff := g.now().Add(-g.cfg.IdleCompactAfter)
	for _, s := range g.deps.Sessions.Loaded() {
		key := s.Key()
		if s.LastConsolidated() >= s.Len() || s.LastActive().After(cutoff) || g.queued(key) > 0 {
			continue
		}
		err := g.enqueue(job{
			in: channels.Inbound{SessionKey: key},
			task: func(ctx context.Context) {
				sess, err := g.deps.Sessions.Get(key)
				if _, locked := sessionLocked(err); locked {
					g.logger.Debug("idle archive: session held by another process", "session", key, "err", err)
					return
				} else if err != nil {
					g.logger.Warn("idle archive: cannot open a session", "session", key, "err", err)
					return
				}
				// Re-check inside the worker: a message may have arrived.
				if sess.LastConsolidated() >= sess.Len() || sess.LastActive().After(g.now().Add(-g.cfg.IdleCompactAfter)) {
					return
				}
				if _, err := g.deps.Consolidator.ArchiveTail(ctx, sess); err != nil {
					g.logger.Error("idle archive failed", "session", key, "err", err)
				}
			},
		})
		if err != nil {
			g.logger.Debug("idle archive not queued", "session", key, "err", err)
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

// archiveSetAside archives the unarchived tails of conversations /new set
// aside that no archive finished: a process killed while /new's background
// archive ran (or before it started) leaves one on disk, and nothing else
// ever reads it again. It goes through the consolidator as /new's archive
// does, and its own (set-aside) metadata records the progress, so it is
// archived once; it never becomes its key's live session. A set-aside
// conversation this process is archiving itself is the same Session (the
// store hands it out), so the consolidator runs the two one after the other
// and the second finds nothing left. checked remembers each set-aside
// conversation once looked at; a failed archive is forgotten there, so a
// later tick tries again.
func (g *Gateway) archiveSetAside(checked *seenSet) {
	if g.deps.Consolidator == nil {
		return
	}
	files, err := g.deps.Sessions.ListSetAside()
	if err != nil {
		g.logger.Warn("archive of set-aside conversations: cannot list them", "err", err)
		return
	}
	loads := 0
	for _, f := range files {
		if loads == diskLoadsPerPass {
			return
		}
		id := f.Key + "\x00" + f.ID
		if !checked.add(id) {
			continue
		}
		loads++
		sess, err := g.deps.Sessions.OpenSetAside(f)
		if _, locked := sessionLocked(err); locked {
			// Another process is archiving it; look again later, in case
			// it dies first.
			checked.remove(id)
			g.logger.Debug("set-aside conversation held by another process", "session", f.Key, "id", f.ID, "err", err)
			continue
		}
		if err != nil {
			g.logger.Warn("cannot load a set-aside conversation", "session", f.Key, "id", f.ID, "err", err)
			continue
		}
		if sess.LastConsolidated() >= sess.Len() {
			g.deps.Sessions.ForgetSetAside(sess)
			continue
		}
		// Queued as a job of its key only to start the archive from a job
		// (goBackground's rule); the archive itself runs in the background
		// so the key's live conversation is not held up by it.
		err = g.enqueue(job{
			in: channels.Inbound{SessionKey: f.Key},
			task: func(context.Context) {
				g.goBackground(func() {
					sess, release, ok := g.holdAside(sess, f)
					if !ok {
						g.logger.Info("a set-aside conversation is being archived by another process", "session", f.Key, "id", f.ID)
						checked.remove(id) // in case its archiver dies first
						return
					}
					defer release()
					ctx, cancel := context.WithTimeout(context.Background(), archiveTimeout)
					defer cancel()
					g.logger.Info("archiving a set-aside conversation left unarchived", "session", f.Key, "id", f.ID,
						"messages", sess.Len()-sess.LastConsolidated())
					if _, err := g.deps.Consolidator.ArchiveTail(ctx, sess); err != nil {
						g.logger.Error("archiving a set-aside conversation failed", "session", f.Key, "id", f.ID, "err", err)
						checked.remove(id)
						return
					}
					g.deps.Sessions.ForgetSetAside(sess)
				})
			},
		})
		if err != nil {
			checked.remove(id)
			g.logger.Debug("set-aside archive not queued", "session", f.Key, "err", err)
		}
	}
}

// seenSet is a set of names safe for concurrent use.
type seenSet struct {
	mu sync.Mutex
	m  map[string]bool
}

// add adds name and reports whether it was not there yet.
func (s *seenSet) add(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[name] {
		return false
	}
	s.m[name] = true
	return true
}

func (s *seenSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, name)
}

// releaseIdle lets go of the files and locks of loaded sessions with no
// work queued or running: each worker does so when its queue empties, and
// this sweep catches a session loaded without one (a /status, a start's
// look at what a crash left).
func (g *Gateway) releaseIdle() {
	for _, s := range g.deps.Sessions.Loaded() {
		if key := s.Key(); g.queued(key) == 0 {
			g.releaseSession(key)
		}
	}
}
