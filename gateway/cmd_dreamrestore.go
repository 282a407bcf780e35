package gateway

import (
	"context"
	"strings"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
)

// restoreListSize is how many changes /dream-restore lists.
const restoreListSize = 10

func cmdDreamRestore() *command {
	return &command{
		name:  "/dream-restore",
		args:  "[sha [keep|all]]",
		help:  "list the changes you can undo, or undo the one with that sha, line by line (admins)",
		admin: true,
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.MemoryLog == nil || g.deps.Dream == nil {
				return "The memory repository is not available in this gateway."
			}
			keep := g.memoryKeep(req.in)
			if req.args == "" {
				cs, err := g.deps.MemoryLog.LogPrefixes(restoreListSize, dream.UndoablePrefixes, keep)
				if err != nil {
					return g.memoryError("/dream-restore", "", err)
				}
				return dreamtext.Chat().List(cs)
			}
			rev, choice, err := parseRestoreArgs(req.args)
			if err != nil {
				return err.Error()
			}
			return g.restore(req, rev, choice, keep)
		},
	}
}

// restore undoes rev for /dream-restore: at once when no later change
// touched its lines or the person chose already (choice "keep" or "all");
// else it shows the choice and changes nothing. Only the files of the
// scopes this conversation may read are touched; a commit of none of them
// reads as unknown.
func (g *Gateway) restore(req cmdRequest, rev, choice string, keep func(string) bool) string {
	scopes := g.dreamScopes(req.in)
	opts := dream.RestoreOptions{Resolution: gitstore.KeepLater}
	if choice == "" {
		plan, err := g.deps.Dream.PlanRestore(rev, scopes)
		if err != nil {
			return g.memoryError("/dream-restore", rev, hideCandidates(err, keep))
		}
		if plan.Conflicts() > 0 {
			return dreamtext.Chat().Choose(plan)
		}
	}
	if choice == dreamtext.ChoiceAll {
		opts.Resolution = gitstore.UndoAll
	}
	res, err := g.deps.Dream.Restore(rev, scopes, opts)
	if err != nil {
		return g.memoryError("/dream-restore", rev, hideCandidates(err, keep))
	}
	return dreamtext.Chat().Restored(res)
}

// restoreArgsError is a /dream-restore argument it cannot read, said as
// the one sentence the person sees.
type restoreArgsError string

func (e restoreArgsError) Error() string { return string(e) }

// parseRestoreArgs reads "<sha> [keep|all]".
func parseRestoreArgs(args string) (rev, choice string, err error) {
	f := strings.Fields(args)
	switch {
	case len(f) == 1:
		return f[0], "", nil
	case len(f) == 2 && (f[1] == dreamtext.ChoiceKeep || f[1] == dreamtext.ChoiceAll):
		return f[0], f[1], nil
	}
	return "", "", restoreArgsError("Use /dream-restore <sha>, then, if later changes touched the same lines, /dream-restore <sha> keep (keep the later lines) or /dream-restore <sha> all (undo it whole).")
}
