package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// adminTools offers one tool, to admins only, and records each ask.
type adminTools struct {
	mu     sync.Mutex
	asked  []ToolTurn // by ForTurn
	shown  []ToolTurn // by StatusText
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

func (a *adminTools) ForTurn(_ context.Context, t ToolTurn) []agent.Tool {
	a.mu.Lock()
	a.asked = append(a.asked, t)
	a.mu.Unlock()
	if !t.Admin {
		return nil
	}
	return []agent.Tool{pingTool{a.called}}
}

func (a *adminTools) StatusText(t ToolTurn) string {
	a.mu.Lock()
	a.shown = append(a.shown, t)
	a.mu.Unlock()
	return "MCP servers:\n- ops (stdio, shared, admins only): ready, 1 tool\n"
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
	if got := tt.asked; len(got) != 2 || got[0].Admin || !got[1].Admin {
		t.Errorf("ForTurn asked for %+v, want a turn not an admin's then an admin's", got)
	}
	// The budget counts the tools the turn really offers.
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if len(fc.fixed) < 3 || strings.Contains(fc.fixed[0], "mcp_ops_ping") || !strings.Contains(fc.fixed[2], "mcp_ops_ping") {
		t.Errorf("fixed prompts counted: %d, first has the admin tool: %v", len(fc.fixed), strings.Contains(fc.fixed[0], "mcp_ops_ping"))
	}

	st := wait(t, must(env.g.Submit(t.Context(), inbound("u", "/status"))))
	if !strings.Contains(st.Reply, "- ops (stdio, shared, admins only): ready, 1 tool") {
		t.Errorf("/status lacks the MCP servers:\n%s", st.Reply)
	}
}

// The per-turn tools are chosen for the conversation's home scope and for
// who reads it: the operator's (the terminal, an admin's own DM with the
// bot) or anyone else's — an admin in a channel, in a private channel, in
// another person's DM, or a person who is not an admin in their own DM.
// /status asks for the same turn.
func TestToolTurnIsTheConversationsScopeAndReaders(t *testing.T) {
	tt := &adminTools{called: make(chan string, 8)}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, func(c *Config, d *Deps) {
		c.Admins = []string{"test:UANA"}
		ws, err := workspace.Open(c.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		d.ScopeFiles = ScopeFolders{Root: ws}
		d.TurnTools = tt
	})
	for _, c := range []struct {
		name   string
		a      audience.Audience
		sender string
		local  bool
		want   ToolTurn
	}{
		{"the terminal", operator, "U1", true, ToolTurn{Scope: audience.Default, Admin: true, Operator: true}},
		{"Ana, an admin, in her DM", anaDM, "UANA", false, ToolTurn{Scope: anaDM.Home(), Admin: true, Operator: true}},
		{"Ana in a public channel", slackTeam, "UANA", false, ToolTurn{Scope: slackTeam.Home(), Admin: true}},
		{"Ana in a private channel", slackPrivate, "UANA", false, ToolTurn{Scope: slackPrivate.Home(), Admin: true}},
		{"Ana in Bob's DM", bobDM, "UANA", false, ToolTurn{Scope: bobDM.Home(), Admin: true}},
		{"Bob, not an admin, in his DM", bobDM, "UBOB", false, ToolTurn{Scope: bobDM.Home()}},
	} {
		for _, text := range []string{"hi", "/status"} {
			in := withAudience(inbound(strings.ReplaceAll(c.name, " ", "-"), text), c.a)
			in.SenderID, in.Local = c.sender, c.local
			tt.mu.Lock()
			tt.asked, tt.shown = nil, nil
			tt.mu.Unlock()
			wait(t, mustSubmit(t, env, in))
			tt.mu.Lock()
			got := slices.Clone(tt.asked)
			if text == "/status" {
				got = slices.Clone(tt.shown)
			}
			tt.mu.Unlock()
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("%s, %s: tools asked for %+v, want %+v", c.name, text, got, c.want)
			}
		}
	}
}
