package gateway

import (
	"context"
	"errors"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
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
				c    gitstore.Commit
				d    gitstore.Diff
				err  error
				keep = g.memoryKeep(req.in)
			)
			if req.args == "" {
				c, d, err = g.deps.MemoryLog.Latest(dream.SubjectPrefix, keep)
			} else {
				c, d, err = g.deps.MemoryLog.Show(req.args, keep)
				if err == nil && keep != nil && d.Empty() {
					// Another scope's commit: as if there were none.
					err = gitstore.ErrUnknownRevision
				}
				err = hideCandidates(err, keep)
			}
			// A skipped batch makes no commit; the latest change says it.
			skips := ""
			if req.args == "" && g.deps.Dream != nil {
				if skips = dreamtext.Skips(g.deps.Dream.Status(g.dreamScopes(req.in)), g.now()); skips != "" {
					skips = "\n\n" + skips
				}
			}
			if req.args == "" && errors.Is(err, gitstore.ErrNoMatchingCommit) && g.deps.Dream != nil {
				// Before the first Dream and after Dreams that changed
				// nothing are different news, and the first needs a hint.
				cmds := dreamtext.Chat()
				cmds.Run = g.commandUsage(req.in, "/dream")
				return cmds.NoDreamCommits(g.deps.Dream.Status(g.dreamScopes(req.in)), g.now()) + skips
			}
			if err != nil {
				return g.memoryError("/dream-log", req.args, err)
			}
			// Undone only when a restore's trailers name it: a restore of
			// another commit, another scope's, is not this one's undo.
			if r, ok, err := g.deps.MemoryLog.UndoneBy(c.SHA, keep); err != nil {
				g.logger.Info("/dream-log: cannot read the restores since", "err", err)
			} else if ok {
				return dreamtext.Chat().UndoneCommit(c, d, r) + skips
			}
			return dreamtext.Chat().Commit(c, d) + skips
		},
	}
}

// memoryError logs a failed Dream or repository call and returns the one
// sentence the user sees.
func (g *Gateway) memoryError(cmd, rev string, err error) string {
	g.logger.Info(cmd+" failed", "rev", rev, "err", err)
	return dreamtext.Chat().Error(err, rev, g.now())
}
