package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/audience"
)

// WebLinks makes the memory page's sign-in links (package web's Server):
// a link signs its holder in as the person of a DM with the bot, reading
// what that DM reads, or as the operator (the terminal's audience).
type WebLinks interface {
	SignInLink(a audience.Audience) (string, error)
}

func cmdWebLink() *command {
	return &command{
		name: "/web-link",
		help: "a link that signs you in to the memory page, where you see what the bot remembers for you (in a direct message)",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			a := req.in.Audience
			switch {
			case g.deps.WebLinks == nil:
				return "The memory page is off (config web.enabled)."
			case a.Kind == audience.Operator:
				// The terminal is the operator's, on the gateway's
				// machine: the link signs in as the operator, as
				// `dreamgate web-link` prints it.
				link, err := g.deps.WebLinks.SignInLink(a)
				if err != nil {
					g.logger.Error("/web-link failed", "session", req.in.SessionKey, "err", err)
					return "I could not make a link; the error is in the gateway log."
				}
				return "Your link to the memory page: " + link + "\nIt signs you in as the operator once, and expires soon. Do not share it."
			case !ownDM(req.in):
				// The link signs its holder in as the asker: posted where
				// others read it, anyone could use it.
				return "Ask me for " + g.commandUsage(req.in, "/web-link") + " in a direct message: the link signs in whoever holds it, as you."
			}
			link, err := g.deps.WebLinks.SignInLink(a)
			if err != nil {
				g.logger.Error("/web-link failed", "session", req.in.SessionKey, "err", err)
				return "I could not make a link; the error is in the gateway log."
			}
			sees := "the team's memory and yours"
			switch {
			case g.mem.Shared():
				sees = "the one memory everyone shares"
			case a.Kind == audience.Guest:
				// A guest or a person of another organisation: the
				// link reads what their DM reads, their own alone.
				sees = "your own memory (not the team's: you are a guest here)"
			}
			return "Your link to the memory page: " + link + "\n" +
				"It signs you in once and expires soon; the page shows what this conversation may see: " + sees +
				". Do not share it: whoever opens it first is signed in as you."
		},
	}
}
