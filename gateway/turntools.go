package gateway

import (
	"context"
	"slices"

	"github.com/dreamgate/dreamgate/agent"
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
// counts it.
func (g *Gateway) toolsFor(ctx context.Context, admin bool) ([]agent.Tool, string) {
	if g.deps.TurnTools == nil {
		return g.deps.Tools, g.toolText
	}
	extra := g.deps.TurnTools.ForTurn(ctx, admin)
	if len(extra) == 0 {
		return g.deps.Tools, g.toolText
	}
	return append(slices.Clip(g.deps.Tools), extra...), g.toolText + toolText(extra)
}
