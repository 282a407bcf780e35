package gateway

import (
	"log/slog"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// turnFailure logs a turn whose model call failed and returns the sentence
// its sender reads. The terminal's user is the operator and reads the cause
// and what to check (llm.UserMessage); a person in Slack or Discord reads
// one plain sentence (llm.PublicMessage), while the cause, the endpoint and
// the config hints go to the log for the operator.
func (g *Gateway) turnFailure(log *slog.Logger, in channels.Inbound, err error, stop agent.Stop) string {
	cause := llm.UserMessage(err)
	if in.Local {
		log.Warn("turn failed", "cause", cause, "err", err, "stop", stop)
		return cause
	}
	log.Error("turn failed; the sender was told the operator knows", "channel", in.Channel, "cause", cause, "err", err, "stop", stop)
	return llm.PublicMessage(err)
}
