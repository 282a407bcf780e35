package gateway

import (
	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/channels"
)

// turnTools are the tools of one chat turn, chosen by who sent it: an admin
// (the terminal's user, config admins) gets Deps.AdminTools when set, anyone
// else Deps.Tools. cmd wires Tools with the guest policy (only the memory
// files may be written) and AdminTools with the full chat policy, so a
// person in a channel cannot rewrite the assistant's or Dream's
// instructions. A wiring that forgets AdminTools gives admins less, never
// guests more.
func (g *Gateway) turnTools(in channels.Inbound) []agent.Tool {
	if g.deps.AdminTools != nil && g.isAdmin(in) {
		return g.deps.AdminTools
	}
	return g.deps.Tools
}
