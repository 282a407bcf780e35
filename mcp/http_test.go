package mcp

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

func TestHTTPServerWithHeaderSecret(t *testing.T) {
	var crashed atomic.Int32
	srv := httptest.NewServer(mcptest.Handler(func() { crashed.Add(1) }, "Authorization", "Bearer s3cret"))
	t.Cleanup(srv.Close)
	getenv := func(k string) string {
		if k == "MCP_TOKEN" {
			return "s3cret"
		}
		return ""
	}
	m, logs := newManager(t, Config{Getenv: getenv, Servers: []ServerConfig{{
		Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"},
		AllowTools: []string{"e*", "add"}, Timeout: 20 * time.Second,
	}}})
	tools := m.ForTurn(t.Context(), operator)
	if got, want := names(tools), []string{"mcp_web_add", "mcp_web_echo", "mcp_web_env"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v (allowTools)", got, want)
	}
	res, _ := loopRun(t, tools, llmtest.ToolCall("mcp_web_echo", `{"text":"over http"}`), llmtest.Text("ok"))
	if got := toolResults(res); len(got) != 1 || got[0] != "echo: over http" {
		t.Fatalf("results = %q", got)
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Error("the header secret reached the log")
	}
}

func TestHTTPServerWithoutTheSecretIsReportedDown(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(nil, "Authorization", "Bearer s3cret"))
	t.Cleanup(srv.Close)
	m, _ := newManager(t, Config{Servers: []ServerConfig{
		{Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"}},
		{Name: "wrong", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer nope"}, Timeout: 20 * time.Second},
	}})
	if tools := m.ForTurn(t.Context(), operator); len(tools) != 0 {
		t.Fatalf("tools = %v", names(tools))
	}
	st := m.Status()
	if st[0].State != stateDown || !strings.Contains(st[0].Problem, "MCP_TOKEN is not set") {
		t.Errorf("status = %+v, want down naming the variable", st[0])
	}
	if st[1].State != stateDown || st[1].Problem != "could not start" {
		t.Errorf("status = %+v", st[1])
	}
	text := m.StatusText(operator)
	if !strings.Contains(text, "web (http, operator): down: tools.mcpServers.web.headers.Authorization: environment variable MCP_TOKEN is not set") {
		t.Errorf("status text:\n%s", text)
	}
}

func TestHTTPServerRestartIsReconnected(t *testing.T) {
	var h atomic.Pointer[http.Handler]
	swap := func() {
		hd := mcptest.Handler(nil, "", "")
		h.Store(&hd)
	}
	swap()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	m, _ := newManager(t, Config{Servers: []ServerConfig{{Name: "web", URL: srv.URL, Timeout: 20 * time.Second}}})
	echo := find(t, m.ForTurn(t.Context(), operator), "mcp_web_echo")
	if out, err := echo.Run(t.Context(), json.RawMessage(`{"text":"one"}`)); err != nil || out != "echo: one" {
		t.Fatalf("first call = %q, %v", out, err)
	}
	swap() // a restarted server knows no sessions
	_, err := echo.Run(t.Context(), json.RawMessage(`{"text":"two"}`))
	if err == nil || !strings.Contains(err.Error(), "stopped working during the call") {
		t.Fatalf("call to the restarted server = %v", err)
	}
	if out, err := echo.Run(t.Context(), json.RawMessage(`{"text":"three"}`)); err != nil || out != "echo: three" {
		t.Fatalf("call after reconnecting = %q, %v", out, err)
	}
}

// A streamable HTTP server's URL may carry its credentials (user info, a
// token in the query, both often from ${ENV}): the log line of a server
// that cannot be reached shows the URL without them.
func TestHTTPServerURLCredentialsStayOutOfTheLog(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	getenv := func(k string) string {
		return map[string]string{"MCP_USER": "mcp-user-0461", "MCP_PASS": "mcp-pass-0462", "MCP_TOKEN": "mcp-token-0463"}[k]
	}
	m, logs := newManager(t, Config{Getenv: getenv, Servers: []ServerConfig{{
		Name: "web", URL: "http://${MCP_USER}:${MCP_PASS}@" + addr + "/mcp?token=${MCP_TOKEN}", Timeout: 20 * time.Second,
	}}})
	if tools := m.ForTurn(t.Context(), operator); len(tools) != 0 {
		t.Fatalf("tools = %v from a server that is not there", names(tools))
	}
	logs.WaitFor(t, "MCP server failed to start")
	for _, secret := range []string{"mcp-user-0461", "mcp-pass-0462", "mcp-token-0463"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}
