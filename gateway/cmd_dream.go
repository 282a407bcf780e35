package gateway

import (
	"context"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
)

// dreamTimeout bounds a /dream started from chat; Dream has its own
// deadline too.
const dreamTimeout = 45 * time.Minute

func cmdDream() *command {
	return &command{
		name: "/dream",
		help: "run Dream now: fold archived conversation into long-term memory",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.Dream == nil {
				if g.deps.DreamOff != "" {
					return g.deps.DreamOff
				}
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
				rep, err := g.deps.Dream.Run(ctx, dream.TriggerManual, progress)
				var text string
				if err != nil {
					g.logger.Warn("/dream did not complete", "session", in.SessionKey, "outcome", rep.Outcome, "err", err)
				}
				if rep.Outcome != "" {
					text = dream.FormatReport(rep)
				} else {
					text = dream.FormatError(err, "", g.now())
				}
				g.send(channels.ReplyTo(in, channels.KindReply, text))
			})
			return ""
		},
	}
}
