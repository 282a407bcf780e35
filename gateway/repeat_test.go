package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/llm"
)

// failingTool always fails with a system error that names a path.
type failingTool struct{}

func (failingTool) Def() llm.ToolDef {
	return llm.ToolDef{Name: "flaky", Description: "fails", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (failingTool) Run(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("write /srv/secret/MEMORY.md: %w", agent.ErrIO)
}

// A chat turn whose model repeats one tool call with the same outcome ends
// after three such calls, well before the iteration limit, and its sender
// reads one sentence saying why.
func TestChatTurnStopsARepeatedToolCall(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		want             string
	}{
		{"same call, same result", "list_dir", `{"path":"."}`, "same tool call with the same result"},
		{"a tool that keeps failing", "flaky", `{}`, "a tool kept failing the same way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
				return llm.Response{FinishReason: llm.FinishToolCalls, ToolCalls: []llm.ToolCall{
					{ID: fmt.Sprint("c", n.Add(1)), Name: tc.tool, Arguments: tc.args}}}, nil
			}, func(c *Config, d *Deps) {
				c.MaxToolIterations = 10
				d.Tools = append(d.Tools, failingTool{})
			})
			r := wait(t, must(env.g.Submit(t.Context(), inbound("loop", "list it"))))
			if !strings.Contains(r.Reply, tc.want) || strings.Contains(r.Reply, "/srv") {
				t.Errorf("reply = %q, want one sentence containing %q", r.Reply, tc.want)
			}
			if out := env.ch.next(t); out.Text != r.Reply {
				t.Errorf("sent %q, result %q", out.Text, r.Reply)
			}
			if got := len(env.model.Requests()); got != 3 {
				t.Errorf("model calls = %d, want 3", got)
			}
		})
	}
}
