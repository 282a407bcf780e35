package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// Observer is told what the gateway did, for metrics; cmd passes
// *metrics.Metrics. Its methods are called on the gateway's goroutines and
// must return at once.
type Observer interface {
	// TurnDone: a chat turn of channel ended with outcome (an Outcome*
	// value); modelTime is what its chat model calls took, gatewayTime
	// the rest (session files, archiving, tools, sending the reply).
	TurnDone(channel, outcome string, modelTime, gatewayTime time.Duration)
	// CommandDone: a chat command ran; command is a name from the
	// command table ("/status"), or "unknown".
	CommandDone(channel, command string)
	// Busy: a message was refused because its conversation's queue was
	// full.
	Busy(channel string)
}

// Turn outcomes reported to Observer.TurnDone.
const (
	OutcomeOK = "ok"
	// OutcomeStopped: cancelled by /stop or by shutdown.
	OutcomeStopped = "stopped"
	// OutcomeModelError: the model call failed (unreachable, rejected,
	// unreadable answer).
	OutcomeModelError = "model-error"
	// OutcomeError: anything else (a session file, a prompt too large).
	OutcomeError = "error"
)

// unknownCommandName is what CommandDone is told for a name not in the table:
// names typed by users would make a metric series each.
const unknownCommandName = "unknown"

// observedTurn runs a turn and tells the Observer how it went.
func (g *Gateway) observedTurn(ctx context.Context, in channels.Inbound) Result {
	start := g.now()
	res := g.turn(ctx, in)
	total := g.now().Sub(start)
	g.observer().TurnDone(in.Channel, turnOutcome(res.Err), res.modelTime, max(total-res.modelTime, 0))
	return res
}

func turnOutcome(err error) string {
	var le *llm.Error
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, errStopped), errors.Is(err, context.Canceled):
		return OutcomeStopped
	case errors.As(err, &le):
		return OutcomeModelError
	default:
		return OutcomeError
	}
}

func (g *Gateway) commandDone(channel string, c *command) {
	name := unknownCommandName
	if c != nil {
		name = c.name
	}
	g.observer().CommandDone(channel, name)
}

// observer returns the Observer, or one that ignores everything.
func (g *Gateway) observer() Observer {
	if g.deps.Observer == nil {
		return noObserver{}
	}
	return g.deps.Observer
}

type noObserver struct{}

func (noObserver) TurnDone(string, string, time.Duration, time.Duration) {}
func (noObserver) CommandDone(string, string)                            {}
func (noObserver) Busy(string)                                           {}
