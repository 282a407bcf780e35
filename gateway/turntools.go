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

// RunningTools is optional for a TurnTools: what ForTurn would return now
// without starting anything, and how many of the sender's sources are not
// running (a turn would try to start them). /status counts with it, since
// showing a status must not start servers.
type RunningTools interface {
	RunningTools(admin bool) (tools []agent.Tool, notRunning int)
}

// baseTools returns the file tools for the sender and their text.
func (g *Gateway) baseTools(admin bool) ([]agent.Tool, string) {
	if g.deps.AdminTools != nil && admin {
		return g.deps.AdminTools, g.adminToolText
	}
	return g.deps.Tools, g.toolText
}

// statusToolText is the tools' text /status counts for the sender of in:
// what a turn would be offered, of the per-turn tools only those running.
// notCounted is how many per-turn sources are left out because they are
// not running; -1 when the TurnTools cannot tell without starting them.
func (g *Gateway) statusToolText(in channels.Inbound) (text string, notCounted int) {
	admin := g.isAdmin(in)
	_, text = g.baseTools(admin)
	if g.deps.TurnTools == nil {
		return text, 0
	}
	rt, ok := g.deps.TurnTools.(RunningTools)
	if !ok {
		return text, -1
	}
	extra, notRunning := rt.RunningTools(admin)
	return text + toolText(extra), notRunning
}

// toolsFor returns a turn's tools and their text as the consolidator
// counts it: the file tools for the sender (turnTools), then the tools
// chosen per turn (MCP servers) for an admin or not.
func (g *Gateway) toolsFor(ctx context.Context, in channels.Inbound) ([]agent.Tool, string) {
	admin := g.isAdmin(in)
	base, text := g.baseTools(admin)
	if g.deps.TurnTools == nil {
		return base, text
	}
	extra := g.deps.TurnTools.ForTurn(ctx, admin)
	if len(extra) == 0 {
		return base, text
	}
	return append(slices.Clip(base), extra...), text + toolText(extra)
}
