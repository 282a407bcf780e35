package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

// TestMain lets the test binary be the stdio MCP server: a test starts it
// again with mcptest.ServeEnv set.
func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

// stdioServer is a server config that runs the test binary as the MCP
// server; starts, when not "", is the file that counts its starts.
func stdioServer(t testing.TB, name string) (ServerConfig, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	return ServerConfig{
		Name:    name,
		Command: exe,
		Env:     []string{mcptest.ServeEnv + "=stdio", mcptest.StartsEnv + "=" + starts},
		Timeout: 20 * time.Second,
	}, starts
}

func countStarts(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func newManager(t testing.TB, cfg Config) (*Manager, *testkit.Buffer) {
	t.Helper()
	logs := &testkit.Buffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg.BaseEnv = append(cfg.BaseEnv, "PATH="+os.Getenv("PATH"))
	m := New(cfg)
	t.Cleanup(func() { _ = m.Close() })
	return m, logs
}

func names(tools []agent.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Def().Name)
	}
	slices.Sort(out)
	return out
}

func find(t *testing.T, tools []agent.Tool, name string) agent.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Def().Name == name {
			return tl
		}
	}
	t.Fatalf("tool %s not offered; got %v", name, names(tools))
	return nil
}

// loopRun runs the agent loop against the fake model with the given tools
// and the scripted replies; it returns the run's tool results by tool name.
func loopRun(t *testing.T, tools []agent.Tool, replies ...llmtest.Reply) (agent.Result, *llmtest.Server) {
	t.Helper()
	fake := llmtest.New(t)
	fake.Push(replies...)
	l := agent.Loop{
		Model:       llm.New(llm.Config{BaseURL: fake.URL(), Model: "m", Timeout: 30 * time.Second}),
		Tools:       tools,
		Purpose:     llm.PurposeChat,
		RepeatLimit: 3,
	}
	res, err := l.Run(t.Context(), []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"}})
	if err != nil {
		t.Fatalf("loop: %v", err)
	}
	return res, fake
}

func toolResults(res agent.Result) []string {
	var out []string
	for _, m := range res.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestStdioListingAndCallsThroughTheLoop(t *testing.T) {
	sc, _ := stdioServer(t, "t")
	sc.DenyTools = []string{"secret"}
	m, logs := newManager(t, Config{Servers: []ServerConfig{sc}})

	tools := m.ForTurn(t.Context(), operator)
	var want []string
	for _, n := range mcptest.Tools {
		if n != "secret" {
			want = append(want, "mcp_t_"+n)
		}
	}
	if got := names(tools); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	var params map[string]any
	if err := json.Unmarshal(find(t, tools, "mcp_t_echo").Def().Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if props, _ := params["properties"].(map[string]any); params["type"] != "object" || props["text"] == nil {
		t.Errorf("echo's schema did not come through: %v", params)
	}

	res, fake := loopRun(t, tools,
		llmtest.ToolCall("mcp_t_echo", `{"text":"hello there"}`),
		llmtest.ToolCall("mcp_t_add", `{"a":2,"b":40}`),
		llmtest.ToolCall("mcp_t_fail", `{}`),
		llmtest.ToolCall("mcp_t_secret", `{}`),
		llmtest.Text("done"))
	if res.Reply != "done" {
		t.Fatalf("reply = %q (stop %s)", res.Reply, res.Stop)
	}
	got := toolResults(res)
	if len(got) != 4 {
		t.Fatalf("tool results = %q", got)
	}
	if got[0] != "echo: hello there" {
		t.Errorf("echo result = %q", got[0])
	}
	if !strings.Contains(got[1], "Structured result:") || !strings.Contains(got[1], `"sum": 42`) ||
		strings.Count(got[1], "42") != 1 {
		t.Errorf("add result = %q, want the structured content once, as JSON", got[1])
	}
	if got[2] != "Error: mcp_t_fail: the fail tool failed on purpose" {
		t.Errorf("fail result = %q", got[2])
	}
	if !strings.HasPrefix(got[3], `Error: unknown tool "mcp_t_secret"`) {
		t.Errorf("a denied tool must not be callable; got %q", got[3])
	}
	// The model saw the tools on every call, and never the denied one.
	for _, r := range fake.Requests() {
		if !slices.Contains(r.Tools, "mcp_t_echo") || slices.Contains(r.Tools, "mcp_t_secret") {
			t.Errorf("request offered %v", r.Tools)
		}
	}
	// The call is logged with its server and the size of its arguments;
	// neither they nor the result are.
	l := logs.String()
	if !strings.Contains(l, "mcp_server=t") || !strings.Contains(l, "args_bytes=22") {
		t.Errorf("the call was not logged with its size:\n%s", l)
	}
	for _, said := range []string{"hello there", `\"a\":2`, "echo: hello", `"sum"`, "failed on purpose"} {
		if strings.Contains(l, said) {
			t.Errorf("the log holds %q, of a call's arguments or result:\n%s", said, l)
		}
	}
	if st := m.Status(); st[0].State != stateReady || st[0].Tools != len(want) {
		t.Errorf("status = %+v", st)
	}
}

func TestStdioCrashIsRestarted(t *testing.T) {
	sc, starts := stdioServer(t, "t")
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}})
	tools := m.ForTurn(t.Context(), operator)
	res, _ := loopRun(t, tools,
		llmtest.ToolCall("mcp_t_crash", `{}`),
		llmtest.ToolCall("mcp_t_echo", `{"text":"again"}`),
		llmtest.Text("ok"))
	got := toolResults(res)
	if len(got) != 2 {
		t.Fatalf("results = %q", got)
	}
	if !strings.Contains(got[0], "Error: MCP server t stopped working during the call") {
		t.Errorf("crash result = %q", got[0])
	}
	if got[1] != "echo: again" {
		t.Errorf("the call after the crash = %q, want the restarted server's answer", got[1])
	}
	if n := countStarts(t, starts); n != 2 {
		t.Errorf("server started %d times, want 2", n)
	}
	if st := m.Status()[0]; st.State != stateReady || st.Failures != 0 {
		t.Errorf("status after the restart = %+v", st)
	}
}

func TestExitBetweenCallsIsNoticed(t *testing.T) {
	sc, starts := stdioServer(t, "t")
	clk := testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}, Now: clk.Now})
	tools := m.ForTurn(t.Context(), operator)
	gone := make(chan struct{})
	s := only(m)
	s.mu.Lock()
	s.lostHook = func() { close(gone) }
	s.mu.Unlock()
	// Kill the process behind the manager's back.
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := json.Unmarshal(bytes.TrimSpace(b), &pid); err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the exit was not noticed within 10s")
	}
	if st := m.Status()[0]; st.Problem != "it exited" {
		t.Errorf("status = %+v", st)
	}
	// The next call starts it again.
	out, err := find(t, tools, "mcp_t_echo").Run(t.Context(), json.RawMessage(`{"text":"back"}`))
	if err != nil || out != "echo: back" {
		t.Fatalf("call after the exit = %q, %v", out, err)
	}
}

func TestBrokenServerBacksOffAndSparesTheOthers(t *testing.T) {
	broken, starts := stdioServer(t, "broken")
	broken.Env = append(broken.Env, mcptest.FailEnv+"=1")
	good, _ := stdioServer(t, "good")
	clk := testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	m, logs := newManager(t, Config{Servers: []ServerConfig{broken, good}, Now: clk.Now})

	turn := func() []string { return names(m.ForTurn(t.Context(), operator)) }
	if got := turn(); len(got) != len(mcptest.Tools) || !strings.HasPrefix(got[0], "mcp_good_") {
		t.Fatalf("tools = %v, want the good server's", got)
	}
	st := m.Status()[0]
	if st.State != stateDown || st.Problem != "could not start" || st.Failures != 1 {
		t.Fatalf("status = %+v", st)
	}
	if !strings.Contains(logs.String(), "failing at start on purpose") {
		t.Errorf("the server's stderr is not in the log:\n%s", logs.String())
	}
	// The first restart is immediate; the next ones wait 1s, 2s, …
	turn()
	if n := countStarts(t, starts); n != 2 {
		t.Fatalf("starts = %d, want 2", n)
	}
	turn()
	if n := countStarts(t, starts); n != 2 {
		t.Fatalf("starts = %d, want still 2 during the backoff", n)
	}
	if text := m.StatusText(operator); !strings.Contains(text, "broken (stdio, operator): down: could not start; next start in 1s") {
		t.Errorf("status text:\n%s", text)
	}
	// A call of one of its tools meanwhile says so, in one sentence.
	clk.Advance(time.Second)
	turn()
	if n := countStarts(t, starts); n != 3 {
		t.Fatalf("starts = %d, want 3 after the delay", n)
	}
	if st := m.Status()[0]; !st.RetryAt.Equal(clk.Now().Add(2 * time.Second)) {
		t.Errorf("retry at %v, want 2s after now", st.RetryAt)
	}
	if m.Healthy() {
		t.Error("Healthy with a server down")
	}
}

func TestServerStuckAtStartCostsATurnItsTimeoutOnly(t *testing.T) {
	stuck, _ := stdioServer(t, "stuck")
	stuck.Env = append(stuck.Env, mcptest.HangEnv+"=1")
	stuck.Timeout = 300 * time.Millisecond
	good, _ := stdioServer(t, "good")
	good.AllowTools = []string{"echo"}
	m, _ := newManager(t, Config{Servers: []ServerConfig{stuck, good}})
	if got := names(m.ForTurn(t.Context(), operator)); !slices.Equal(got, []string{"mcp_good_echo"}) {
		t.Fatalf("tools = %v", got)
	}
	if st := m.Status()[0]; st.State != stateDown || st.Problem != "did not start within 300ms" {
		t.Errorf("status = %+v", st)
	}
}

func TestHangingToolIsCutAtItsTimeout(t *testing.T) {
	sc, starts := stdioServer(t, "t")
	m, logs := newManager(t, Config{Servers: []ServerConfig{sc}})
	tools := m.ForTurn(t.Context(), operator)
	// The start is done; only the call is timed.
	only(m).cfg.Timeout = 3 * time.Second // the echo after it has room on a loaded machine
	res, _ := loopRun(t, tools,
		llmtest.ToolCall("mcp_t_slow", `{}`),
		llmtest.ToolCall("mcp_t_echo", `{"text":"still here"}`),
		llmtest.Text("ok"))
	got := toolResults(res)
	if len(got) != 2 || got[0] != "Error: mcp_t_slow did not answer within 3s, so the call was abandoned" {
		t.Fatalf("results = %q", got)
	}
	if got[1] != "echo: still here" {
		t.Errorf("the server should still serve after a timed-out call: %q", got[1])
	}
	if n := countStarts(t, starts); n != 1 {
		t.Errorf("starts = %d; a timeout must not restart the server", n)
	}
	if !strings.Contains(logs.String(), "MCP tool call timed out") {
		t.Error("the timeout is not in the log")
	}
}

func TestLongResultIsCutWithANote(t *testing.T) {
	sc, _ := stdioServer(t, "t")
	sc.AllowTools = []string{"big"}
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}})
	res, _ := loopRun(t, m.ForTurn(t.Context(), operator), llmtest.ToolCall("mcp_t_big", `{"n":50000}`), llmtest.Text("ok"))
	got := toolResults(res)
	if len(got) != 1 || !strings.HasSuffix(got[0], "[cut: the result was 50000 characters; only the first 16000 are shown]") {
		t.Fatalf("result end = %q", got[0][max(0, len(got[0])-100):])
	}
}

func TestEnvironmentIsTheBaseAndTheServersOwn(t *testing.T) {
	t.Setenv("DREAMGATE_TEST_GATEWAY_SECRET", "leak")
	sc, _ := stdioServer(t, "t")
	sc.Env = append(sc.Env, "GREETING=${WHO}-hi")
	getenv := func(k string) string { return map[string]string{"WHO": "ann"}[k] }
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}, Getenv: getenv})
	env := find(t, m.ForTurn(t.Context(), operator), "mcp_t_env")
	for arg, want := range map[string]string{
		`{"name":"GREETING"}`:                      "GREETING=ann-hi",
		`{"name":"DREAMGATE_TEST_GATEWAY_SECRET"}`: "DREAMGATE_TEST_GATEWAY_SECRET is not set",
	} {
		out, err := env.Run(t.Context(), json.RawMessage(arg))
		if err != nil || out != want {
			t.Errorf("env %s = %q, %v; want %q", arg, out, err, want)
		}
	}
}

func TestSchemaIsAnObjectSchemaProvidersAccept(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, `{"type":"object","properties":{}}`},
		{"not a schema", `{"type":"object","properties":{}}`},
		{map[string]any{"properties": map[string]any{"q": map[string]any{"type": "string"}}}, `{"properties":{"q":{"type":"string"}},"type":"object"}`},
		{map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}, `{"type":"object"}`},
		{map[string]any{"type": "object", "required": []string{"a"}}, `{"required":["a"],"type":"object"}`},
	} {
		if got := string(schema(c.in)); got != c.want {
			t.Errorf("schema(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestRenderShowsMediaAsPlaceholders(t *testing.T) {
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "two files"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
			&sdk.ResourceLink{Name: "a.txt", URI: "file:///a.txt"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", Text: "bee"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}},
		},
		StructuredContent: map[string]any{"count": 2},
	}
	want := "two files\n[image image/png, 5 bytes, not shown]\n[resource a.txt: file:///a.txt]\n" +
		"[resource file:///b.txt]\nbee\n[resource file:///c.bin, application/octet-stream, 2 bytes, not shown]\n" +
		"Structured result:\n{\n  \"count\": 2\n}"
	if got := render(res); got != want {
		t.Errorf("render =\n%s\nwant\n%s", got, want)
	}
}

func TestToolNames(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"github", "search_issues", "mcp_github_search_issues"},
		{"fs", "read.file/v2", "mcp_fs_read_file_v2"},
	} {
		if got := ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	long := ToolName("server", strings.Repeat("t", 100))
	other := ToolName("server", strings.Repeat("t", 99)+"u")
	if len(long) != 64 || long == other {
		t.Errorf("long names: %q (%d) and %q", long, len(long), other)
	}
}

func TestClashingNamesAcrossServersKeepTheFirst(t *testing.T) {
	m, logs := newManager(t, Config{})
	ab := &server{m: m, cfg: ServerConfig{Name: "a_b"}}
	a := &server{m: m, cfg: ServerConfig{Name: "a"}}
	t1 := &tool{srv: ab, remote: "c", def: llm.ToolDef{Name: ToolName("a_b", "c")}}
	t2 := &tool{srv: a, remote: "b_c", def: llm.ToolDef{Name: ToolName("a", "b_c")}}
	t3 := &tool{srv: a, remote: "d", def: llm.ToolDef{Name: ToolName("a", "d")}}
	got := m.merge([][]*tool{{t1}, {t2, t3}})
	if len(got) != 2 || got[0] != t1 || got[1] != t3 {
		t.Errorf("merged = %v", names(got))
	}
	if !strings.Contains(logs.String(), "same name") {
		t.Error("the clash is not logged")
	}
}

func TestCloseStopsTheServers(t *testing.T) {
	sc, _ := stdioServer(t, "t")
	m := New(Config{Servers: []ServerConfig{sc}, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
	tools := m.ForTurn(context.Background(), operator)
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := tools[0].Run(t.Context(), json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("call after Close = %v", err)
	}
}

// A server that changes its tools while connected (notifications/tools/
// list_changed) has them listed again: the next turn offers the new tool
// and can call it, without a restart.
func TestToolListChangeIsFollowed(t *testing.T) {
	sc, starts := stdioServer(t, "t")
	m, logs := newManager(t, Config{Servers: []ServerConfig{sc}})
	tools := m.ForTurn(t.Context(), operator)
	if slices.Contains(names(tools), "mcp_t_late") {
		t.Fatal("the late tool is there before grow ran")
	}
	res, _ := loopRun(t, tools, llmtest.ToolCall("mcp_t_grow", `{}`), llmtest.Text("done"))
	if got := toolResults(res); len(got) != 1 || got[0] != "grown" {
		t.Fatalf("grow = %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(names(m.ForTurn(t.Context(), operator)), "mcp_t_late") {
		if time.Now().After(deadline) {
			t.Fatalf("the new tool never showed; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, _ = loopRun(t, m.ForTurn(t.Context(), operator), llmtest.ToolCall("mcp_t_late", `{}`), llmtest.Text("done"))
	if got := toolResults(res); len(got) != 1 || got[0] != "late" {
		t.Fatalf("late = %q", got)
	}
	if n := countStarts(t, starts); n != 1 {
		t.Errorf("the server was started %d times, want once", n)
	}
}

// only is the one process of m's first server, which must have started.
func only(m *Manager) *server {
	s := m.pools[0].lookup(audience.Default)
	if s == nil {
		panic("the server never started")
	}
	return s
}
