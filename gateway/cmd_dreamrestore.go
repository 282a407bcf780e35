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
			keep := g.memoryKeep(req.in)
			if req.args == "" {
				cs, err := g.deps.MemoryLog.Log(restoreListSize, dream.SubjectPrefix, keep)
				if err != nil {
					return g.memoryError("/dream-restore", "", err)
				}
				return dreamtext.Chat().List(cs)
			}
			// Only the files of the scopes this conversation may read are
			// put back; a commit of none of them reads as unknown.
			res, err := g.deps.Dream.Restore(req.args, g.dreamScopes(req.in))
			if err != nil {
				return g.memoryError("/dream-restore", req.args, hideCandidates(err, keep))
			}
			return dreamtext.Restore(res)
		},
	}
}
