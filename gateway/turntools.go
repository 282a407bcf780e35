package gateway

import (
	"context"
	"slices"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/channels"
)

// TurnTools supplies tools chosen for each turn (the MCP servers' tools),
// beside the fixed Deps.Tools.
type TurnTools interface {
	// ForTurn returns the extra tools of a turn whose sender is, or is not,
	// an admin. It never fails: whatever is unavailable is left out (and
	// reported by StatusText). Names must not clash with Deps.Tools.
	ForTurn(ctx context.Context, admin bool) []agent.Tool
	// StatusText is a block for /status, each line ending in "\n"; "" when
	// there is nothing to show.
	StatusText() string
}

// toolsFor returns a turn's tools and their text as the consolidator
// counts it: the file tools for the sender (turnTools), then the tools
// chosen per turn (MCP servers) for an admin or not.
func (g *Gateway) toolsFor(ctx context.Context, in channels.Inbound) ([]agent.Tool, string) {
	admin := g.isAdmin(in)
	base, text := g.deps.Tools, g.toolText
	if g.deps.AdminTools != nil && admin {
		base, text = g.deps.AdminTools, g.adminToolText
	}
	if g.deps.TurnTools == nil {
		return base, text
	}
	extra := g.deps.TurnTools.ForTurn(ctx, admin)
	if len(extra) == 0 {
		return base, text
	}
	return append(slices.Clip(base), extra...), text + toolText(extra)
}
