package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
)

// dreamTimeout bounds a /dream started from chat; Dream has its own
// deadline too.
const dreamTimeout = 30 * time.Minute

func cmdDream() *command {
	return &command{
		name: "/dream",
		help: "run Dream now: fold archived conversation into long-term memory",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.Dream == nil {
				return "Dream is off in this gateway's config."
			}
			// Dream runs beside the conversation, not in its queue: it may
			// take minutes and the conversation goes on meanwhile.
			in := req.in
			g.goBackground(func() {
				ctx, cancel := context.WithTimeout(context.Background(), dreamTimeout)
				defer cancel()
				stop := g.startTyping(ctx, in)
				defer stop()
				progress := func(msg string) {
					g.send(channels.ReplyTo(in, channels.KindProgress, msg))
				}
				rep, err := g.deps.Dream.Run(ctx, "chat", progress)
				var text string
				switch {
				case errors.Is(err, dream.ErrAlreadyRunning):
					text = dream.FormatBusy(err, g.now())
				case err != nil && rep.Outcome == "":
					g.logger.Error("/dream failed", "session", in.SessionKey, "err", err)
					text = "Dream failed; the error is in the gateway log."
				default:
					if err != nil {
						g.logger.Warn("/dream did not complete", "session", in.SessionKey, "err", err)
					}
					text = dream.FormatReport(rep)
				}
				g.send(channels.ReplyTo(in, channels.KindReply, text))
			})
			return ""
		},
	}
}
