package gateway

import (
	"context"
	"fmt"

	"github.com/dreamgate/dreamgate/channels"
)

// stoppedNotice answers each message /stop dropped from the queue.
const stoppedNotice = "Stopped before I got to this message; send it again if you still want an answer."

func cmdStop() *command {
	return &command{
		name:     "/stop",
		help:     "stop the answer being worked on in this conversation and drop the messages waiting behind it",
		priority: true,
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if req.in.InOrder {
				// A script's /stop waited its turn: the lines before it
				// are answered, and those behind it came after it. Left
				// alone (the job running is this /stop itself), it would
				// cancel itself and say nothing.
				return "Nothing is running here."
			}
			// What the person sees stops: the running turn and everything
			// queued behind it, not just the first.
			dropped := g.dropQueued(req.in.SessionKey)
			g.refuseStopped(dropped)
			running := g.cancelRunning(req.in.SessionKey)
			switch {
			case running:
				// The cancelled turn itself replies "Stopped.".
				return ""
			case len(dropped) > 0:
				return fmt.Sprintf("Stopped; dropped %d waiting message(s).", len(dropped))
			case g.stopElsewhere(req.in.SessionKey):
				// Its cancelled turn replies "Stopped." there.
				return "Asked the dreamgate process answering this conversation to stop."
			}
			return "Nothing is running here."
		},
	}
}

// refuseStopped tells each job /stop dropped that it was not answered.
func (g *Gateway) refuseStopped(dropped []job) {
	for _, j := range dropped {
		g.send(channels.ReplyTo(j.in, channels.KindError, stoppedNotice))
		g.markAnswered(j.in)
		if j.done != nil {
			j.done <- Result{Reply: stoppedNotice, Err: errStopped}
		}
	}
}
