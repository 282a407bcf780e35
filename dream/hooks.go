package dream

import (
	"context"
	"encoding/json"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/gitstore"
)

// hookRepo reports each commit to after (Deps.AfterWrite); nil after leaves
// repo as it is.
func hookRepo(repo Repo, after func(string)) Repo {
	if after == nil || repo == nil {
		return repo
	}
	return hookedRepo{Repo: repo, after: after}
}

type hookedRepo struct {
	Repo
	after func(string)
}

func (h hookedRepo) Commit(subject, body string) (gitstore.Commit, error) {
	c, err := h.Repo.Commit(subject, body)
	if err == nil {
		h.after("dream-commit")
	}
	return c, err
}

// hookTools reports each successful edit_file of phase 2 to Deps.AfterWrite.
func (d *Dreamer) hookTools(tools []agent.Tool) []agent.Tool {
	if d.after == nil {
		return tools
	}
	out := make([]agent.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		if t.Def().Name == agent.ToolEditFile {
			out[i] = hookedTool{Tool: t, after: d.after}
		}
	}
	return out
}

type hookedTool struct {
	agent.Tool
	after func(string)
}

func (h hookedTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := h.Tool.Run(ctx, args)
	if err == nil {
		h.after("dream-edit")
	}
	return out, err
}
