package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/channels"
)

// commandHinter is a channel that says how its platform lets people type
// the commands (slash commands, a mention first).
type commandHinter interface {
	CommandHint(in channels.Inbound) string
}

func cmdHelp() *command {
	return &command{
		name: "/help",
		help: "list the commands",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			names := make([]string, 0, len(g.commands))
			for n := range g.commands {
				names = append(names, n)
			}
			slices.Sort(names)
			var b strings.Builder
			b.WriteString("Commands:")
			for _, n := range names {
				c := g.commands[n]
				if c.admin && !g.isAdmin(req.in) {
					continue
				}
				usage := n
				if c.args != "" {
					usage += " " + c.args
				}
				fmt.Fprintf(&b, "\n%s — %s", usage, c.help)
			}
			if h, ok := g.channel(req.in.Channel).(commandHinter); ok {
				if hint := h.CommandHint(req.in); hint != "" {
					b.WriteString("\n" + hint)
				}
			}
			b.WriteString("\nAnything else is sent to the assistant.")
			if req.in.Local {
				// The terminal's own way out; it never reaches the gateway.
				b.WriteString("\nCtrl-D or /quit leaves.")
			}
			return b.String()
		},
	}
}
