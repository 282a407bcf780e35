package gateway

import "context"

func cmdStop() *command {
	return &command{
		name:     "/stop",
		help:     "stop the answer being worked on in this conversation",
		priority: true,
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.cancelRunning(req.in.SessionKey) {
				// The cancelled turn itself replies "Stopped.".
				return ""
			}
			return "Nothing is running here."
		},
	}
}
