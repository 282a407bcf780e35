package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

func TestMCPConfigErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, servers, field string }{
		{"no transport", `{"x": {}}`, `tools.mcpServers.x: set "command"`},
		{"both transports", `{"x": {"command": "a", "url": "http://h"}}`, "tools.mcpServers.x: set either"},
		{"bad name", `{"a b": {"command": "a"}}`, "tools.mcpServers.a b: a server name"},
		{"bad url", `{"x": {"url": "ftp://h"}}`, "tools.mcpServers.x.url: must be an http"},
		{"sse", `{"x": {"type": "sse", "url": "http://h/sse"}}`, "tools.mcpServers.x.type: SSE servers are not supported"},
		{"stdio type without command", `{"x": {"type": "stdio", "url": "http://h"}}`, "tools.mcpServers.x.command"},
		{"headers on stdio", `{"x": {"command": "a", "headers": {"A": "b"}}}`, "tools.mcpServers.x.headers"},
		{"env on http", `{"x": {"url": "http://h", "env": {"A": "b"}}}`, "tools.mcpServers.x: \"args\" and \"env\""},
		{"timeout", `{"x": {"command": "a", "timeoutSeconds": -1}}`, "tools.mcpServers.x.timeoutSeconds"},
		{"pattern", `{"x": {"command": "a", "denyTools": ["[" ]}}`, "tools.mcpServers.x.denyTools[0]"},
		{"unknown key", `{"x": {"command": "a", "toolTimeout": 3}}`, "tools.mcpServers.x.toolTimeout: unknown key"},
		{"audience", `{"x": {"command": "a", "audience": "everyone"}}`, `tools.mcpServers.x.audience: must be "shared", "perScope" or "operator"`},
		{"adminsOnly false alone", `{"x": {"command": "a", "adminsOnly": false}}`, "tools.mcpServers.x.adminsOnly: false no longer opens"},
		{"cap of a shared server", `{"x": {"command": "a", "audience": "shared", "maxRunning": 2}}`, "tools.mcpServers.x.maxRunning: is for a per-scope server"},
		{"cap out of range", `{"x": {"command": "a", "audience": "perScope", "maxRunning": 0}}`, "tools.mcpServers.x.maxRunning: must be between 1 and 64"},
		{"idle stop of an operator's server", `{"x": {"command": "a", "idleStopMinutes": 5}}`, "tools.mcpServers.x.idleStopMinutes: is for a per-scope server"},
		{"scope of a shared server", `{"x": {"command": "a", "audience": "shared", "env": {"DIR": "{scopeDir}"}}}`, "tools.mcpServers.x.env.DIR: {scope} and {scopeDir} are filled in only"},
		{"scope dir of an HTTP server", `{"x": {"url": "https://h/{scope}", "audience": "perScope", "headers": {"X": "{scopeDir}"}}}`, "tools.mcpServers.x.headers.X: {scopeDir} is a folder"},
		{"HTTP server not told its scope", `{"x": {"url": "https://h/mcp", "audience": "perScope"}}`, "tools.mcpServers.x.url: a per-scope HTTP server needs {scope}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			body := `{"workspace": "/tmp/ws", "tools": {"mcpServers": ` + tt.servers + `}}`
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(path, func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.field)
			}
		})
	}
	ok := `{"tools": {"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"], "denyTools": ["write_*"]},
		"gh": {"type": "streamableHttp", "url": "https://${GH_HOST}/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "adminsOnly": true, "timeoutSeconds": 60},
		"notes": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "{scopeDir}/memory.json"}, "audience": "perScope", "maxRunning": 8, "idleStopMinutes": 30},
		"web": {"url": "https://notes.example/mcp/{scope}", "audience": "perScope"},
		"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "audience": "shared", "adminsOnly": false},
		"off": {"command": "nothing", "enabled": false}}}}`
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(ok), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path, func(string) string { return "" }); err != nil {
		t.Fatalf("the documented example is refused: %v", err)
	}
}

// TestChatUsesAnMCPServer runs the built binary with two MCP servers: this
// test binary as a stdio server, and one that cannot start. The turn
// calls the working server's tool through the model; the broken one only
// shows in /status. /new then archives the turn, and the archive call sees
// the tool's result as evidence.
func TestChatUsesAnMCPServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.set("tools.mcpServers", map[string]any{
		"t": map[string]any{
			"command": exe, "env": map[string]string{mcptest.ServeEnv: "stdio"},
			"allowTools": []string{"echo", "add"},
		},
		"broken": map[string]any{"command": filepath.Join(h.home, "no-such-server")},
	})
	h.llm.Push(
		llmtest.ToolCall("mcp_t_echo", `{"text":"from the binary"}`),
		llmtest.Text("The server said hello."),
		llmtest.Text("- The echo server answered: from the binary"), // the archive call of /new
	)
	r := h.run("chat", "-m", "Ask the echo server.")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := strings.TrimSpace(r.stdout); got != "The server said hello." {
		t.Errorf("stdout = %q", got)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	if !slices.Contains(reqs[0].Tools, "mcp_t_echo") || !slices.Contains(reqs[0].Tools, "mcp_t_add") ||
		slices.Contains(reqs[0].Tools, "mcp_t_crash") || !slices.Contains(reqs[0].Tools, "read_file") {
		t.Errorf("tools offered: %v", reqs[0].Tools)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != llm.RoleTool || last.Content != "echo: from the binary" {
		t.Errorf("tool result = %+v", last)
	}

	st := h.run("chat", "-m", "/status")
	if !strings.Contains(st.stdout, "MCP servers:") || !strings.Contains(st.stdout, "- t (stdio, operator): not started") ||
		!strings.Contains(st.stdout, "- broken (stdio, operator): not started") {
		t.Errorf("/status:\n%s", st.stdout)
	}

	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: exit %d: %s", r.code, r.stderr)
	}
	reqs = h.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model got %d requests, want the archive call as the 3rd", len(reqs))
	}
	var transcript strings.Builder
	for _, m := range reqs[2].Messages {
		transcript.WriteString(m.Content)
	}
	if !strings.Contains(transcript.String(), "TOOL mcp_t_echo: echo: from the binary") {
		t.Errorf("the archive transcript lacks the MCP result:\n%s", transcript.String())
	}
}

func TestHealthzDetailsMCPServers(t *testing.T) {
	h := newHarness(t)
	h.set("tools.mcpServers", map[string]any{
		"broken": map[string]any{"command": filepath.Join(h.home, "no-such-server"), "adminsOnly": true},
	})
	a := h.app()
	g, _ := a.gateway(false)
	// A turn from an admin asks for the admins-only server, which fails.
	if tools := a.mcp.ForTurn(t.Context(), mcp.Turn{Admin: true}); len(tools) != 0 {
		t.Fatalf("tools from a broken server: %d", len(tools))
	}
	hs := &healthState{}
	hs.set(g, a.model)
	hs.mcp.Store(a.mcp)
	rec := httptest.NewRecorder()
	hs.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	var body struct {
		Status string
		MCP    []map[string]any
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "ok" || len(body.MCP) != 1 || body.MCP[0]["name"] != "broken" ||
		body.MCP[0]["state"] != "down" || body.MCP[0]["problem"] != "could not start" {
		t.Errorf("healthz = %s", rec.Body.String())
	}
	if strings.Contains(rec.Body.String(), h.home) {
		t.Errorf("healthz shows a path: %s", rec.Body.String())
	}
}

// TestAdminsOnlyMCPServerThroughTheGateway wires the real gateway and MCP
// manager as the gateway command does: a Slack user who is not an admin
// gets the shared server's tools only; an admin gets the adminsOnly one
// too, in a channel, as adminsOnly always meant; neither gets a server
// whose audience is not said, which is the operator's.
func TestAdminsOnlyMCPServerThroughTheGateway(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.set("admins", []string{"slack:UBOSS"})
	server := func(key string, v any) map[string]any {
		s := map[string]any{"command": exe, "env": map[string]string{mcptest.ServeEnv: "stdio"}, "allowTools": []string{"echo"}}
		if key != "" {
			s[key] = v
		}
		return s
	}
	h.set("tools.mcpServers", map[string]any{"open": server("audience", "shared"), "ops": server("adminsOnly", true), "quiet": server("", nil)})
	a := h.app()
	g, _ := a.gateway(false)
	t.Cleanup(func() { _ = g.Shutdown(t.Context()) })

	ask := func(sender string) []string {
		t.Helper()
		before := len(h.llm.Requests())
		h.llm.Push(llmtest.Text("ok"))
		done, err := g.Submit(t.Context(), channels.Inbound{
			Channel: "slack", ChatID: "C1", SessionKey: "slack:C1:" + sender, SenderID: sender, Text: "hi",
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.Err != nil {
				t.Fatalf("turn failed: %v", r.Err)
			}
		case <-time.After(time.Minute):
			t.Fatal("no turn result within a minute")
		}
		reqs := h.llm.Requests()
		if len(reqs) != before+1 {
			t.Fatalf("model got %d requests", len(reqs)-before)
		}
		return reqs[before].Tools
	}
	if tools := ask("UANN"); !slices.Contains(tools, "mcp_open_echo") || slices.Contains(tools, "mcp_ops_echo") || slices.Contains(tools, "mcp_quiet_echo") {
		t.Errorf("a non-admin was offered %v", tools)
	}
	if tools := ask("UBOSS"); !slices.Contains(tools, "mcp_open_echo") || !slices.Contains(tools, "mcp_ops_echo") || slices.Contains(tools, "mcp_quiet_echo") {
		t.Errorf("an admin in a channel was offered %v", tools)
	}
}

// `dreamgate status` lists the configured MCP servers: name, transport,
// on or off, for whom; never their command, URL, headers or env.
func TestStatusListsMCPServersWithoutSecrets(t *testing.T) {
	h := newHarness(t)
	r := h.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "MCP servers: none\n") {
		t.Errorf("status without servers: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	h.set("tools.mcpServers", map[string]any{
		"files": map[string]any{"command": "/opt/SECRET-bin/files", "env": map[string]string{"API_TOKEN": "env-SECRET"}},
		"web": map[string]any{"url": "https://user:pw-SECRET@mcp.example/mcp", "adminsOnly": true,
			"headers": map[string]string{"Authorization": "Bearer header-SECRET"}},
		"old":   map[string]any{"command": "old-server", "enabled": false},
		"notes": map[string]any{"command": "notes", "audience": "perScope", "maxRunning": 2},
		"fetch": map[string]any{"command": "fetch", "audience": "shared"},
	})
	r = h.run("status")
	if r.code != 0 {
		t.Fatalf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := "MCP server fetch: stdio, enabled, everyone, one process for all\n" +
		"MCP server files: stdio, enabled, the operator and admins' own DMs\n" +
		"MCP server notes: stdio, enabled, everyone, a process per memory scope (at most 2 at once)\n" +
		"MCP server old: stdio, off (tools.mcpServers.old.enabled is false)\n" +
		"MCP server web: http, enabled, admins only, one process for all\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("status lacks\n%s\nin:\n%s", want, r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, "SECRET") {
		t.Errorf("status shows a secret:\n%s", r.stdout)
	}
}
