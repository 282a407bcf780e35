package mcp

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

// perScope is the test binary as a per-scope notes server: its notes in
// notes.txt of its working directory, which is its scope's folder.
func perScope(t *testing.T, name string) (ServerConfig, string) {
	sc, starts := stdioServer(t, name)
	sc.Use = UsePerScope
	sc.Env = append(sc.Env, mcptest.NotesEnv+"=notes.txt", "WHO={scope}", "WHERE={scopeDir}")
	return sc, starts
}

// call runs the tool name of tools with args and returns its result.
func call(t *testing.T, tools []agent.Tool, name, args string) string {
	t.Helper()
	out, err := find(t, tools, name).Run(t.Context(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// A per-scope server runs a process of its own for each scope, in the
// scope's folder, with {scope} and {scopeDir} filled in: a note taken in
// Ana's DM is not read in a public channel (through the agent loop, as a
// model would ask), and is still Ana's after her process is stopped and
// started again.
func TestPerScopeServerKeepsEachScopesStateApart(t *testing.T) {
	sc, starts := perScope(t, "notes")
	sc.Env = append(sc.Env, "KEPT=${scope}")
	state := t.TempDir()
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}, StateDir: state, Getenv: func(string) string { return "x" }})

	res, _ := loopRun(t, m.ForTurn(t.Context(), anaDM),
		llmtest.ToolCall("mcp_notes_note", `{"text":"Ana's salary band is K7Q2Z9"}`), llmtest.Text("noted"))
	if got := toolResults(res); len(got) != 1 || got[0] != "noted" {
		t.Fatalf("note in Ana's DM = %q", got)
	}
	res, _ = loopRun(t, m.ForTurn(t.Context(), bobPublic), llmtest.ToolCall("mcp_notes_notes", `{}`), llmtest.Text("none"))
	if got := toolResults(res); len(got) != 1 || got[0] != "no notes" {
		t.Errorf("the public channel read %q", got)
	}
	if n := countStarts(t, starts); n != 2 {
		t.Errorf("%d processes started for two scopes, want 2", n)
	}
	anaDir := filepath.Join(state, "notes", "person-slack-t1-uana")
	if b, err := os.ReadFile(filepath.Join(anaDir, "notes.txt")); err != nil || !strings.Contains(string(b), "K7Q2Z9") {
		t.Errorf("Ana's folder holds %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(state, "notes", "team-slack-t1", "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("the channel's folder has notes: %v", err)
	}
	if fi, err := os.Stat(anaDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("Ana's folder: %v, %v; want owner-only", fi.Mode(), err)
	}
	env := m.ForTurn(t.Context(), anaDM)
	for arg, want := range map[string]string{
		`{"name":"WHO"}`:   "WHO=person-slack-t1-uana",
		`{"name":"WHERE"}`: "WHERE=" + anaDir,
		`{"name":"KEPT"}`:  "KEPT=x", // ${scope} is the environment's
	} {
		if got := call(t, env, "mcp_notes_env", arg); got != want {
			t.Errorf("env %s = %q, want %q", arg, got, want)
		}
	}

	// Stopped (idle) and started again, Ana's process reads her notes.
	s := m.pools[0].lookup(anaDM.Scope)
	s.mu.Lock()
	stop := s.stopLocked()
	s.mu.Unlock()
	stop()
	if got := call(t, m.ForTurn(t.Context(), anaDM), "mcp_notes_notes", `{}`); !strings.Contains(got, "K7Q2Z9") {
		t.Errorf("Ana's notes after a restart: %q", got)
	}
	if n := countStarts(t, starts); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
}

// A per-scope HTTP server gets a connection of its own for each scope, to
// the URL with the scope in it: the remote server keeps one state per
// scope.
func TestPerScopeHTTPServerIsToldTheScope(t *testing.T) {
	srv := httptest.NewServer(mcptest.PerPathHandler())
	t.Cleanup(srv.Close)
	m, _ := newManager(t, Config{Servers: []ServerConfig{{
		Name: "web", URL: srv.URL + "/mcp/{scope}", Use: UsePerScope, Timeout: 20 * time.Second,
	}}})
	if got := call(t, m.ForTurn(t.Context(), anaDM), "mcp_web_note", `{"text":"Ana's secret"}`); got != "noted" {
		t.Fatalf("note = %q", got)
	}
	if got := call(t, m.ForTurn(t.Context(), bobDM), "mcp_web_notes", `{}`); got != "no notes" {
		t.Errorf("Bob's DM read %q", got)
	}
	if got := call(t, m.ForTurn(t.Context(), anaDM), "mcp_web_notes", `{}`); !strings.Contains(got, "Ana's secret") {
		t.Errorf("Ana's DM read %q", got)
	}
}

// A per-scope stdio server without the state directory does not start,
// and says why.
func TestPerScopeServerNeedsTheStateDirectory(t *testing.T) {
	sc, starts := perScope(t, "notes")
	m, _ := newManager(t, Config{Servers: []ServerConfig{sc}})
	if tools := m.ForTurn(t.Context(), anaDM); len(tools) != 0 {
		t.Fatalf("tools %v without a state directory", names(tools))
	}
	if n := countStarts(t, starts); n != 0 {
		t.Errorf("started %d times", n)
	}
	if st := m.Status()[0]; st.State != stateDown || st.Problem != errNoStateDir.Error() {
		t.Errorf("status = %+v", st)
	}
}

// running lists the scopes of p whose process runs.
func running(p *pool) []audience.Scope {
	var out []audience.Scope
	for _, s := range p.all() {
		s.mu.Lock()
		if s.sess != nil {
			out = append(out, s.scope)
		}
		s.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// capped is a per-scope notes server of at most two processes, stopped
// after ten idle minutes, on a clock the test moves; turn moves it a
// minute and asks for a turn's tools.
func capped(t *testing.T) (m *Manager, starts string, clk *testkit.Clock, turn func(Turn) []agent.Tool) {
	sc, starts := perScope(t, "notes")
	sc.MaxRunning, sc.IdleStop = 2, 10*time.Minute
	clk = testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	m, _ = newManager(t, Config{Servers: []ServerConfig{sc}, StateDir: t.TempDir(), Now: clk.Now})
	turn = func(tt Turn) []agent.Tool {
		t.Helper()
		clk.Advance(time.Minute)
		return m.ForTurn(t.Context(), tt)
	}
	return m, starts, clk, turn
}

// slowCall starts the slow tool of tools, and waits until the call is in
// flight in scope's process; the call ends when the test does, or at
// cancel.
func slowCall(t *testing.T, m *Manager, tools []agent.Tool, scope audience.Scope) (cancel func()) {
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = find(t, tools, "mcp_notes_slow").Run(ctx, json.RawMessage(`{}`))
	}()
	waitFor(t, "the slow call to begin", func() bool {
		s := m.pools[0].lookup(scope)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.inFlight == 1
	})
	return func() { stop(); <-done }
}

// At its cap, a per-scope server stops the process used longest ago to
// start another, never one with a call in flight; when every process is
// busy, the new scope's turn goes without the server. The clock is the
// test's.
func TestPerScopeCapStopsTheProcessUsedLongestAgo(t *testing.T) {
	m, starts, _, turn := capped(t)
	p := m.pools[0]

	turn(anaDM)
	bob := turn(bobDM)
	turn(bobPublic) // Ana's DM was used longest ago: stopped
	if r := running(p); !slices.Equal(r, []audience.Scope{bobDM.Scope, bobPublic.Scope}) || countStarts(t, starts) != 3 {
		t.Errorf("running %v after a third scope, %d starts; want Bob's two", r, countStarts(t, starts))
	}

	// A call in flight in Bob's DM keeps its process: Ana's turn stops
	// the channel's, though Bob's DM was used before it.
	cancelBob := slowCall(t, m, bob, bobDM.Scope)
	defer cancelBob()
	ana := turn(anaDM)
	if len(ana) == 0 {
		t.Fatal("Ana's DM got no tools at the cap with an idle process to stop")
	}
	if r := running(p); !slices.Equal(r, []audience.Scope{anaDM.Scope, bobDM.Scope}) {
		t.Errorf("running %v; want Bob's DM (busy) and Ana's", r)
	}

	// Every process busy: a turn of another scope gets none of the tools.
	cancelAna := slowCall(t, m, ana, anaDM.Scope)
	defer cancelAna()
	if tools := turn(bobPublic); len(tools) != 0 {
		t.Errorf("the channel got %v with every process busy", names(tools))
	}
	if n := countStarts(t, starts); n != 4 {
		t.Errorf("%d starts, want 4", n)
	}
}

// A scope's process no turn has used for IdleStop is stopped; one used
// since is kept. The clock is the test's.
func TestPerScopeIdleProcessesAreStopped(t *testing.T) {
	m, starts, clk, turn := capped(t)
	p := m.pools[0]
	turn(anaDM) // at 12:01
	turn(bobDM)
	clk.Advance(7 * time.Minute)
	turn(bobDM) // at 12:10
	m.stopIdle()
	if r := running(p); len(r) != 2 {
		t.Fatalf("running %v 9 minutes after Ana's last turn; want both", r)
	}
	clk.Advance(time.Minute)
	m.stopIdle()
	if r := running(p); !slices.Equal(r, []audience.Scope{bobDM.Scope}) {
		t.Errorf("running %v after Ana's DM was idle 10 minutes and Bob's 1; want Bob's", r)
	}
	clk.Advance(10 * time.Minute)
	m.stopIdle()
	if r := running(p); len(r) != 0 {
		t.Errorf("running %v after every scope was idle", r)
	}
	if st := m.Status()[0]; st.State != stateIdle || st.Running != 0 {
		t.Errorf("status after the idle stop = %+v", st)
	}
	// Used again, a stopped scope starts again.
	if tools := turn(anaDM); len(tools) == 0 || countStarts(t, starts) != 3 {
		t.Errorf("Ana's DM after the idle stop: %v, %d starts", names(tools), countStarts(t, starts))
	}
}

// waitFor waits for cond, which another goroutine makes true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
