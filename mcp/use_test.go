package mcp

import (
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The turns of the tests: the operator at the terminal; Ana, an admin, in
// her own DM with the bot and in a public channel; Bob, who is not, in his
// DM and in the same channel.
var (
	operator  = Turn{Admin: true, Operator: true}
	anaDM     = Turn{Scope: "person-slack-t1-uana", Admin: true, Operator: true}
	anaPublic = Turn{Scope: "team-slack-t1", Admin: true}
	bobDM     = Turn{Scope: "person-slack-t1-ubob"}
	bobPublic = Turn{Scope: "team-slack-t1"}
)

// Who is offered which server: one whose use is not said is the
// operator's (the terminal, an admin's own DM) and is not even started
// for anyone else; a shared one and a per-scope one are everyone's; an
// adminsOnly one is every admin's, wherever they are, as it always was.
func TestEachServerIsOfferedToItsAudienceOnly(t *testing.T) {
	var servers []ServerConfig
	starts := map[string]string{}
	for _, s := range []struct {
		name       string
		use        Use
		adminsOnly bool
	}{{"ops", UseOperator, false}, {"open", UseShared, false}, {"admin", UseShared, true}, {"notes", UsePerScope, false}} {
		sc, file := stdioServer(t, s.name)
		sc.AllowTools, sc.Use, sc.AdminsOnly = []string{"echo"}, s.use, s.adminsOnly
		servers = append(servers, sc)
		starts[s.name] = file
	}
	m, _ := newManager(t, Config{Servers: servers, StateDir: t.TempDir()})

	for _, c := range []struct {
		name string
		turn Turn
		want []string
	}{
		{"Bob in a public channel", bobPublic, []string{"mcp_notes_echo", "mcp_open_echo"}},
		{"Bob in his DM", bobDM, []string{"mcp_notes_echo", "mcp_open_echo"}},
		{"Ana, an admin, in a public channel", anaPublic, []string{"mcp_admin_echo", "mcp_notes_echo", "mcp_open_echo"}},
	} {
		if got := names(m.ForTurn(t.Context(), c.turn)); !slices.Equal(got, c.want) {
			t.Errorf("%s: tools %v, want %v", c.name, got, c.want)
		}
	}
	if n := countStarts(t, starts["ops"]); n != 0 {
		t.Fatalf("turns that may not use the operator's server started it %d times", n)
	}
	// A model calling the operator's tool by name in Bob's DM gets nothing.
	res, _ := loopRun(t, m.ForTurn(t.Context(), bobDM), llmtest.ToolCall("mcp_ops_echo", `{"text":"x"}`), llmtest.Text("ok"))
	if got := toolResults(res); len(got) != 1 || !strings.HasPrefix(got[0], `Error: unknown tool "mcp_ops_echo"`) {
		t.Errorf("results = %q", got)
	}
	all := []string{"mcp_admin_echo", "mcp_notes_echo", "mcp_open_echo", "mcp_ops_echo"}
	for _, c := range []struct {
		name string
		turn Turn
	}{{"Ana's DM", anaDM}, {"the operator", operator}} {
		if got := names(m.ForTurn(t.Context(), c.turn)); !slices.Equal(got, all) {
			t.Errorf("%s: tools %v, want %v", c.name, got, all)
		}
	}
	// An admin's DM and the terminal share the operator's one process.
	if n := countStarts(t, starts["ops"]); n != 1 {
		t.Errorf("the operator's server started %d times, want once", n)
	}
}

// /status shows a conversation the servers it may use, and a per-scope
// server's state in its own scope: Bob's channel reads nothing of the
// operator's or the admins' servers, nor how many scopes run; the
// operator reads every server.
func TestStatusTextShowsTheServersATurnMayUse(t *testing.T) {
	ops, _ := stdioServer(t, "ops")
	admin, _ := stdioServer(t, "admin")
	admin.Use, admin.AdminsOnly = UseShared, true
	notes, _ := stdioServer(t, "notes")
	notes.Use = UsePerScope
	m, _ := newManager(t, Config{Servers: []ServerConfig{ops, admin, notes}, StateDir: t.TempDir()})
	m.ForTurn(t.Context(), anaDM)

	if got, want := m.StatusText(bobPublic), "MCP servers:\n- notes (stdio, per scope): not started\n"; got != want {
		t.Errorf("Bob's channel reads\n%s\nwant\n%s", got, want)
	}
	got := m.StatusText(operator)
	for _, want := range []string{
		"- ops (stdio, operator): ready, ",
		"- admin (stdio, shared, admins only): ready, ",
		"- notes (stdio, per scope): not started (1 of at most 4 scopes running)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the operator's status lacks %q:\n%s", want, got)
		}
	}
	if got := m.StatusText(anaDM); !strings.Contains(got, "- notes (stdio, per scope): ready, ") {
		t.Errorf("Ana's DM's status:\n%s", got)
	}
	empty := New(Config{Servers: []ServerConfig{ops}})
	t.Cleanup(func() { _ = empty.Close() })
	if got := empty.StatusText(bobDM); got != "" {
		t.Errorf("no server Bob may use, yet /status shows %q", got)
	}
	st := m.Status()
	if st[2].Use != "perScope" || st[2].Running != 1 || st[2].MaxRunning != DefaultMaxRunning || st[0].Use != "operator" {
		t.Errorf("status = %+v", st)
	}
}

// RunningTools counts what a turn would get without starting anything:
// /status must not start servers to show the prompt's size.
func TestRunningToolsStartsNothing(t *testing.T) {
	open, openStarts := stdioServer(t, "open")
	open.AllowTools, open.Use = []string{"echo"}, UseShared
	ops, opsStarts := stdioServer(t, "ops")
	ops.AllowTools = []string{"echo"}
	notes, notesStarts := stdioServer(t, "notes")
	notes.AllowTools, notes.Use = []string{"echo"}, UsePerScope
	m, _ := newManager(t, Config{Servers: []ServerConfig{open, ops, notes}, StateDir: t.TempDir()})

	if tools, notRunning := m.RunningTools(operator); len(tools) != 0 || notRunning != 3 {
		t.Errorf("before any turn: tools %v, %d not running; want none, 3", names(tools), notRunning)
	}
	if n := countStarts(t, openStarts) + countStarts(t, opsStarts) + countStarts(t, notesStarts); n != 0 {
		t.Fatalf("RunningTools started %d servers", n)
	}
	m.ForTurn(t.Context(), bobPublic)
	tools, notRunning := m.RunningTools(bobPublic)
	if got := names(tools); !slices.Equal(got, []string{"mcp_notes_echo", "mcp_open_echo"}) || notRunning != 0 {
		t.Errorf("Bob's channel after a turn: tools %v, %d not running", got, notRunning)
	}
	tools, notRunning = m.RunningTools(bobDM)
	if got := names(tools); !slices.Equal(got, []string{"mcp_open_echo"}) || notRunning != 1 {
		t.Errorf("Bob's DM after a turn in the channel: tools %v, %d not running; want the open server's, 1", got, notRunning)
	}
	tools, notRunning = m.RunningTools(operator)
	if got := names(tools); !slices.Equal(got, []string{"mcp_open_echo"}) || notRunning != 2 {
		t.Errorf("the operator after a turn in the channel: tools %v, %d not running", got, notRunning)
	}
	if n := countStarts(t, opsStarts); n != 0 {
		t.Errorf("RunningTools started the operator's server")
	}
}
