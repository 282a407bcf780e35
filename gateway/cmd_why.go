package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/audience"
)

// whyLimit bounds the lines /why shows: a chat reply, not a report.
const whyLimit = 8

func cmdWhy() *command {
	return &command{
		name: "/why",
		args: "<words>",
		help: "where a remembered fact came from: the memory lines holding those words, with their priority, date and source conversations",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if len(whyWords(req.args)) == 0 {
				return "Which fact? Try " + g.commandUsage(req.in, "/why") + " dark mode."
			}
			a := req.in.Audience
			readable := g.readable(a)
			ms, total, err := FindWhy(g.cfg.Workspace, readable, req.args, whyLimit, g.deps.Provenance)
			if err != nil {
				g.logger.Error("/why failed", "session", req.in.SessionKey, "err", err)
				if len(ms) == 0 {
					return "I could not read memory to answer; the error is in the gateway log."
				}
			}
			home := g.home(a)
			return WhyText(req.args, ms, total, func(m WhyMatch) string {
				return whyFileName(m) + ", " + g.scopeLabel(a, home, m.Scope)
			})
		},
	}
}

// scopeLabel names scope s for a reader in audience a, whose own scope is
// home, as the prompt's headings do.
func (g *Gateway) scopeLabel(a audience.Audience, home, s audience.Scope) string {
	switch {
	case s == audience.Default && len(g.readable(a)) == 1:
		return "memory"
	case s == home && a.Kind != audience.Team:
		return "this conversation's memory"
	default:
		return "the team's memory"
	}
}
