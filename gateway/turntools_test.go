package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
)

// adminTools offers one tool, to admins only, and records each ask.
type adminTools struct {
	mu     sync.Mutex
	asked  []bool
	called chan string
}

type pingTool struct{ called chan string }

func (p pingTool) Def() llm.ToolDef {
	return llm.ToolDef{Name: "mcp_ops_ping", Description: "pings", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (p pingTool) Run(context.Context, json.RawMessage) (string, error) {
	p.called <- "ping"
	return "pong", nil
}

func (a *adminTools) ForTurn(_ context.Context, admin bool) []agent.Tool {
	a.mu.Lock()
	a.asked = append(a.asked, admin)
	a.mu.Unlock()
	if !admin {
		return nil
	}
	return []agent.Tool{pingTool{a.called}}
}

func (a *adminTools) StatusText() string {
	return "MCP servers:\n- ops (stdio, admins only): ready, 1 tool\n"
}

// fixedRecorder is a consolidator that records what it is told the fixed
// part of the prompt is.
type fixedRecorder struct {
	fakeConsolidator
	mu    sync.Mutex
	fixed []string
}

func (f *fixedRecorder) record(p consolidator.Prompt) {
	f.mu.Lock()
	f.fixed = append(f.fixed, p.Fixed+p.Tools)
	f.mu.Unlock()
}

func (f *fixedRecorder) Before(_ context.Context, _ consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error) {
	f.record(p)
	return p, consolidator.Report{}, nil
}

func (f *fixedRecorder) After(_ context.Context, _ consolidator.Session, p consolidator.Prompt, _ consolidator.Sent) (consolidator.Report, error) {
	f.record(p)
	return consolidator.Report{}, nil
}

func TestTurnToolsAreChosenPerSender(t *testing.T) {
	tt := &adminTools{called: make(chan string, 4)}
	fc := &fixedRecorder{}
	env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		last := req.Messages[len(req.Messages)-1]
		if slices.Contains(names, "mcp_ops_ping") && last.Role == llm.RoleUser {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "mcp_ops_ping", Arguments: "{}"}}, FinishReason: llm.FinishToolCalls}, nil
		}
		return textReply("tools: " + strings.Join(names, ",")), nil
	}, func(c *Config, d *Deps) {
		c.Admins = []string{"test:BOSS"}
		d.TurnTools = tt
		d.Consolidator = fc
	})

	user := inbound("u", "hi")
	r := wait(t, must(env.g.Submit(t.Context(), user)))
	if strings.Contains(r.Reply, "mcp_ops_ping") || !strings.Contains(r.Reply, "read_file") {
		t.Errorf("a non-admin's turn offered %q", r.Reply)
	}
	boss := inbound("b", "hi")
	boss.SenderID = "BOSS"
	r = wait(t, must(env.g.Submit(t.Context(), boss)))
	if !strings.Contains(r.Reply, "mcp_ops_ping") || !strings.Contains(r.Reply, "read_file") {
		t.Errorf("an admin's turn offered %q", r.Reply)
	}
	select {
	case <-tt.called:
	default:
		t.Error("the admin's turn did not run the per-turn tool")
	}
	if got := tt.asked; !slices.Equal(got, []bool{false, true}) {
		t.Errorf("ForTurn asked with admin = %v", got)
	}
	// The budget counts the tools the turn really offers.
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if len(fc.fixed) < 3 || strings.Contains(fc.fixed[0], "mcp_ops_ping") || !strings.Contains(fc.fixed[2], "mcp_ops_ping") {
		t.Errorf("fixed prompts counted: %d, first has the admin tool: %v", len(fc.fixed), strings.Contains(fc.fixed[0], "mcp_ops_ping"))
	}

	st := wait(t, must(env.g.Submit(t.Context(), inbound("u", "/status"))))
	if !strings.Contains(st.Reply, "- ops (stdio, admins only): ready, 1 tool") {
		t.Errorf("/status lacks the MCP servers:\n%s", st.Reply)
	}
}
