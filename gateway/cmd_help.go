package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

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
				usage := g.commandUsage(req.in, n)
				if c.args != "" {
					usage += " " + c.args
				}
				fmt.Fprintf(&b, "\n%s — %s", usage, c.help)
			}
			b.WriteString("\nAnything else is sent to the assistant.")
			if note := g.commandNote(req.in); note != "" {
				b.WriteString("\n" + note)
			}
			if req.in.Local {
				// The terminal's own way out; it never reaches the gateway.
				b.WriteString("\nCtrl-D or /quit leaves.")
			}
			return b.String()
		},
	}
}
