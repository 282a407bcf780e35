package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
)

// restoreListSize is how many Dream commits /dream-restore lists.
const restoreListSize = 10

// wholeRestoreRefused answers /dream-restore <sha> where a restore would
// reach memory the conversation may not read.
const wholeRestoreRefused = "I cannot undo a Dream change from this conversation without also undoing memory kept for other conversations; the operator can, with `dreamgate dream restore <sha>`."

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
			if keep != nil {
				// The memory repository restores whole commits until it
				// learns paths, so from a conversation that may not read
				// every memory file a restore would undo other audiences'
				// memory. (Dream's Restore refuses that too; this says it
				// in a sentence.)
				return wholeRestoreRefused
			}
			res, err := g.deps.Dream.Restore(req.args, g.dreamScopes(req.in))
			if err != nil {
				return g.memoryError("/dream-restore", req.args, err)
			}
			return dreamtext.Restore(res)
		},
	}
}
