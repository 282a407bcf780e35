package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

// slackPeople starts the gateway binary on the Slack fake, Ana (an admin)
// and Bob in workspace T1, with the harness's config: it returns the world
// their DMs and the public channel #general are in.
func slackPeople(t *testing.T, h *harness) (*slackWorld, place, place, place) {
	t.Helper()
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"}})
	t.Cleanup(sl.Close)
	h.set("admins", []string{"slack:UANA"})
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	// The gateway reports the connection once Slack said hello; the fake
	// takes events once it holds the socket: wait for both.
	if err := sl.WaitConnections(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}
	anaDM := place{name: "Ana's DM", aud: audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}, key: "slack:DANA"}
	bobDM := place{name: "Bob's DM", aud: audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}, key: "slack:DBOB"}
	general := place{name: "#general", aud: audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}, key: "slack:CGENERAL"}
	for _, p := range []place{anaDM, bobDM, general} {
		w.users[p.key], w.teams[p.key] = "UANA", "T1"
	}
	w.users[bobDM.key] = "UBOB"
	return w, anaDM, bobDM, general
}

// turnRequests are the chat requests of p's conversation from the index
// from on of the fake model's requests.
func turnRequests(h *harness, p place, from int) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range h.llm.Requests()[from:] {
		if chatKey(r) == p.key {
			out = append(out, r)
		}
	}
	return out
}

// The case through the binary and the Slack fake: a notes server
// per scope keeps what Ana notes in her DM there — #general, which reads
// the same server's tools, finds no note, and its folder is Ana's scope's
// alone — while a server whose audience the config does not say is
// offered only in Ana's own DM (she is an admin), never in #general (not
// even to her) or in Bob's DM; a shared one is offered everywhere.
func TestMCPServersPerAudienceThroughSlack(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	server := func(allow []string, extra map[string]any) map[string]any {
		s := map[string]any{"command": exe, "env": map[string]string{mcptest.ServeEnv: "stdio"}, "allowTools": allow}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	h.set("tools.mcpServers", map[string]any{
		"notes": server([]string{"note", "notes"}, map[string]any{"audience": "perScope",
			// in the scope's folder, the process's working directory
			"env": map[string]string{mcptest.ServeEnv: "stdio", mcptest.NotesEnv: "notes.txt"}}),
		"ops": server([]string{"echo"}, nil),
		"pub": server([]string{"echo"}, map[string]any{"audience": "shared"}),
	})
	w, anaDM, bobDM, general := slackPeople(t, h)

	turn := func(p place, text string, replies ...llmtest.Reply) ([]string, []string) {
		t.Helper()
		return scriptedTurn(t, h, w, p, text, replies...)
	}
	everyone := []string{"mcp_notes_note", "mcp_notes_notes", "mcp_pub_echo"}
	admins := []string{"mcp_notes_note", "mcp_notes_notes", "mcp_ops_echo", "mcp_pub_echo"}

	tools, results := turn(anaDM, "note my salary band",
		llmtest.ToolCall("mcp_notes_note", `{"text":"Ana's salary band is K7Q2Z9"}`), llmtest.Text("Noted."))
	if got := mcpNames(tools); !slices.Equal(got, admins) || !slices.Equal(results, []string{"noted"}) {
		t.Errorf("Ana's DM: tools %v, results %q", got, results)
	}
	tools, results = turn(general, "what notes do you have?",
		llmtest.ToolCall("mcp_notes_notes", `{}`), llmtest.Text("None."))
	if got := mcpNames(tools); !slices.Equal(got, everyone) || !slices.Equal(results, []string{"no notes"}) {
		t.Errorf("#general (Ana, an admin, speaking): tools %v, results %q", got, results)
	}
	tools, _ = turn(bobDM, "hello", llmtest.Text("Hi Bob."))
	if got := mcpNames(tools); !slices.Equal(got, everyone) {
		t.Errorf("Bob's DM: tools %v", got)
	}
	_, results = turn(anaDM, "what notes do you have?",
		llmtest.ToolCall("mcp_notes_notes", `{}`), llmtest.Text("Your band."))
	if len(results) != 1 || !strings.Contains(results[0], "K7Q2Z9") {
		t.Errorf("Ana's DM does not read its own note: %q", results)
	}

	notes := filepath.Join(h.state, "mcp", "notes")
	if b, err := os.ReadFile(filepath.Join(notes, string(anaDM.aud.Home()), "notes.txt")); err != nil || !strings.Contains(string(b), "K7Q2Z9") {
		t.Errorf("Ana's scope's folder: %q, %v", b, err)
	}
	for _, p := range []place{general, bobDM} {
		if b, err := os.ReadFile(filepath.Join(notes, string(p.aud.Home()), "notes.txt")); err == nil {
			t.Errorf("%s's folder holds notes: %q", p.name, b)
		}
	}
	// /status in #general names only the servers it may use.
	if st := w.say(t, general, "/status"); strings.Contains(st, "ops") || !strings.Contains(st, "notes (stdio, per scope): ready, 2 tools") ||
		strings.Contains(st, "scopes running") {
		t.Errorf("/status in #general:\n%s", st)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", w.gw.stderr.String())
	}
}

// scriptedTurn says text in p with the model's replies scripted, and
// returns the MCP tools the turn's first request offered (sorted) and the
// turn's tool results.
func scriptedTurn(t *testing.T, h *harness, w *slackWorld, p place, text string, replies ...llmtest.Reply) (tools, results []string) {
	t.Helper()
	from := len(h.llm.Requests())
	h.llm.Push(replies...)
	w.say(t, p, text)
	reqs := turnRequests(h, p, from)
	if len(reqs) != len(replies) {
		t.Fatalf("%s: %d chat requests, want %d", p.name, len(reqs), len(replies))
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		switch m.Role {
		case llm.RoleUser:
			results = nil // the turn's own results follow its message
		case llm.RoleTool:
			results = append(results, m.Content)
		}
	}
	return mcpNames(reqs[0].Tools), results
}

// mcpNames are the MCP tools of tools, sorted.
func mcpNames(tools []string) []string {
	var out []string
	for _, n := range tools {
		if strings.HasPrefix(n, "mcp_") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
