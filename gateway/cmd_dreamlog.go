package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
)

func cmdDreamLog() *command {
	return &command{
		name: "/dream-log",
		args: "[sha]",
		help: "show the latest Dream change, or the commit with that sha",
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.MemoryLog == nil {
				return "The memory repository is not available in this gateway."
			}
			var (
				c   gitstore.Commit
				d   gitstore.Diff
				err error
			)
			if req.args == "" {
				c, d, err = g.deps.MemoryLog.Latest(dream.SubjectPrefix)
			} else {
				c, d, err = g.deps.MemoryLog.Show(req.args)
			}
			return formatRevisionError(g, req.args, err, func() string { return dream.FormatCommit(c, d) })
		},
	}
}

// formatRevisionError answers the usual ways a sha lookup fails in one
// sentence, or returns ok() when it did not.
func formatRevisionError(g *Gateway, rev string, err error, ok func() string) string {
	switch {
	case err == nil:
		return ok()
	case errors.Is(err, gitstore.ErrAmbiguousRevision):
		return fmt.Sprintf("%q matches more than one commit; give more characters of the sha.", rev)
	case errors.Is(err, gitstore.ErrUnknownRevision) && rev == "":
		return "Dream has not changed memory yet. Run /dream to start one."
	case errors.Is(err, gitstore.ErrUnknownRevision):
		return fmt.Sprintf("No commit %s. Try /dream-restore to list the Dream commits.", rev)
	default:
		g.logger.Error("memory repository lookup failed", "rev", rev, "err", err)
		return "The memory repository could not be read; the error is in the gateway log."
	}
}
