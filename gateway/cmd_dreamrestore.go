package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
)

// restoreListSize is how many Dream commits /dream-restore lists.
const restoreListSize = 10

func cmdDreamRestore() *command {
	return &command{
		name:  "/dream-restore",
		args:  "[sha]",
		help:  "list recent Dream commits, or undo the one with that sha (admins)",
		admin: true,
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.MemoryLog == nil || g.deps.Dream == nil {
				return "The memory repository is not available in this gateway."
			}
			if req.args == "" {
				cs, err := g.deps.MemoryLog.Log(restoreListSize, dream.SubjectPrefix)
				if err != nil {
					return g.memoryError("/dream-restore", "", err)
				}
				return dreamtext.Chat().List(cs)
			}
			res, err := g.deps.Dream.Restore(req.args)
			if err != nil {
				return g.memoryError("/dream-restore", req.args, err)
			}
			return dreamtext.Restore(res)
		},
	}
}
