package gateway

import (
	"context"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session"
)

// archiveTimeout bounds the background archive of an old session after
// /new; shutdown waits for it.
const archiveTimeout = 10 * time.Minute

func cmdNew() *command {
	return &command{
		name: "/new",
		help: "start a new conversation (the old one is archived for Dream)",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			old, _, err := g.deps.Sessions.Rotate(req.in.SessionKey)
			if msg, ok := sessionLocked(err); ok {
				g.logger.Warn("/new refused: conversation held by another process", "session", req.in.SessionKey, "err", err)
				return msg
			}
			if err != nil {
				g.logger.Error("/new failed", "session", req.in.SessionKey, "err", err)
				return "I could not start a new conversation; the error is in the gateway log."
			}
			if g.deps.Consolidator == nil || old.LastConsolidated() >= old.Len() {
				return "New conversation started."
			}
			// The old tail is archived in the background, so /new answers at
			// once; Shutdown waits for it, so a one-shot `chat -m /new`
			// does not exit before the archive is written.
			g.goBackground(func() { g.archivePrevious(old) })
			return "New conversation started. The previous one is being archived for Dream."
		},
	}
}

// archivePrevious archives the tail of a conversation Rotate set aside,
// under the audience it was held under (the session's own); run by
// goBackground. A failure leaves it to the scan of set-aside
// conversations (archiveSetAside).
func (g *Gateway) archivePrevious(old *session.Session) {
	release, ok := g.holdAsideArchive(old.Key(), old.ID())
	if !ok {
		return // another process archives it
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), archiveTimeout)
	defer cancel()
	if _, err := g.deps.Consolidator.ArchiveTail(ctx, old); err != nil {
		g.logger.Error("archiving the previous conversation failed", "session", old.Key(), "err", err)
	}
}
