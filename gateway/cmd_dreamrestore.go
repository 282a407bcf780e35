package gateway

import (
	"context"
	"errors"

	"github.com/dreamgate/dreamgate/dream"
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
					g.logger.Error("memory log failed", "err", err)
					return "The memory repository could not be read; the error is in the gateway log."
				}
				return dream.FormatList(cs)
			}
			res, err := g.deps.Dream.Restore(req.args)
			if errors.Is(err, dream.ErrAlreadyRunning) {
				return dream.FormatBusy(err, g.now())
			}
			if errors.Is(err, dream.ErrNotDreamCommit) {
				return "Only Dream commits can be restored; /dream-restore lists them."
			}
			return formatRevisionError(g, req.args, err, func() string { return dream.FormatRestore(res) })
		},
	}
}
