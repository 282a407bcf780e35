package mcp

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// What a tool is asked and what it answers is what people said and what
// the server holds: no record at info or above, of the MCP servers or of
// the agent loop that runs their tools, holds it — whether the call
// worked, failed, was refused, timed out or met a dead server. A record
// names the server, the tool and sizes.
func TestToolArgumentsAndResultsAreNotLoggedAtInfo(t *testing.T) {
	const said = "ANA-SAID-7Q2Z9"
	rec := &testkit.LogRecorder{}
	sc, _ := stdioServer(t, "t")
	sc.Timeout = 20 * time.Second
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}, Logger: rec.Logger()})
	tools := m.ForTurn(t.Context(), operator)
	// The start is done; the slow call is cut, and the quick ones (and a
	// restart) have room on a loaded machine.
	only(m).cfg.Timeout = 3 * time.Second

	fake := llmtest.New(t)
	fake.Push(
		llmtest.ToolCall("mcp_t_echo", `{"text":"`+said+`"}`),
		llmtest.ToolCall("mcp_t_note", `{"text":"`+said+`"}`),
		llmtest.ToolCall("mcp_t_notes", `{}`),
		llmtest.ToolCall("mcp_t_fail", `{"why":"`+said+`"}`),
		llmtest.ToolCall("mcp_t_big", `{"n":"`+said+`"}`), // refused by the server's schema
		llmtest.ToolCall("mcp_t_slow", `{"text":"`+said+`"}`),
		llmtest.ToolCall("mcp_t_crash", `{"text":"`+said+`"}`),
		llmtest.ToolCall("mcp_t_echo", `{"text":"`+said+` again"}`),
		llmtest.Text("done"))
	l := agent.Loop{
		Model:   llm.New(llm.Config{BaseURL: fake.URL(), Model: "m", Timeout: 30 * time.Second}),
		Tools:   tools,
		Purpose: llm.PurposeChat,
		Logger:  rec.Logger(),
	}
	res, err := l.Run(t.Context(), []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	results := toolResults(res)
	if len(results) != 8 || !strings.Contains(results[0], said) || !strings.Contains(results[2], said) {
		t.Fatalf("results = %q", results)
	}
	calls := 0
	for _, r := range rec.Records() {
		if r.Message == "MCP tool call" {
			calls++
			if r.Attrs["tool"] == "" || r.Attrs["args_bytes"] == "" {
				t.Errorf("a call's record lacks the tool or the size: %v", r.Attrs)
			}
		}
		if r.Level < slog.LevelInfo {
			continue
		}
		text := r.Message
		for k, v := range r.Attrs {
			text += " " + k + "=" + v
		}
		if strings.Contains(text, said) {
			t.Errorf("a %s record holds what was said: %s", r.Level, text)
		}
	}
	if calls != 8 {
		t.Errorf("%d calls recorded, want 8", calls)
	}
}
