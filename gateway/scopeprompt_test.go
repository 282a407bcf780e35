package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

var (
	anaDM   = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	bobDM   = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}
	team2   = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T2"}
	connect = audience.Audience{Kind: audience.Shared, Platform: "slack", Team: "T1", Chat: "CX"}
	discDM  = audience.Audience{Kind: audience.Person, Platform: "discord", Person: "42"}
	// guestDM is Ana's DM when she is a guest of the workspace (or of
	// another organisation): her own memory, not the team's.
	guestDM = audience.Audience{Kind: audience.Guest, Platform: "slack", Team: "T1", Person: "UANA"}
)

// scopedWorkspace writes a token into every memory file of the workspace
// root and of each scope, and returns the tokens by scope.
func scopedWorkspace(t *testing.T, env *testEnv) map[audience.Scope]string {
	t.Helper()
	tokens := map[audience.Scope]string{audience.Default: "ROOTTOKEN"}
	for i, a := range []audience.Audience{slackTeam, slackPrivate, anaDM, bobDM, team2, connect, discDM} {
		tokens[a.Home()] = fmt.Sprintf("TOKEN%dX", i)
	}
	for s, tok := range tokens {
		for _, rel := range workspace.MemoryFiles() {
			p := filepath.Join(env.ws, filepath.FromSlash(s.Dir()), filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(rel+" of "+tok), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(env.ws, "AGENTS.md"), []byte("Shared voice: be kind."), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokens
}

func scopeEnv(t testing.TB, f func(context.Context, llm.Request) (llm.Response, error), shared bool) *testEnv {
	t.Helper()
	var env *testEnv
	env = newTestEnv(t, f, func(c *Config, d *Deps) {
		d.Memory = memory.New(memory.NewDisk(c.Workspace), shared)
		ws, err := workspace.Open(c.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		d.ScopeFiles = ScopeFolders{Root: ws}
	})
	return env
}

// Each audience's prompt shows the memory of exactly the scopes it may
// read, each under a heading saying whose it is, and AGENTS.md always; the
// system message is the same at every turn of a conversation.
func TestPromptShowsExactlyTheReadableScopes(t *testing.T) {
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
	tokens := scopedWorkspace(t, env)
	cases := []struct {
		a        audience.Audience
		headings []string
	}{
		{operator, []string{"# Soul (SOUL.md)"}},
		{slackTeam, []string{"Memory shared with the team — from this Slack workspace's public channels"}},
		{slackPrivate, []string{"Memory shared with the team", "Memory of this private conversation"}},
		{anaDM, []string{"Memory shared with the team", "Memory from your direct messages with Ana —"}},
		{team2, []string{"Memory shared with the team"}},
		{connect, []string{"Memory of this shared channel", "people from other organisations"}},
		{discDM, []string{"Memory from your direct messages with Ana —"}},
		{guestDM, []string{"Memory from your direct messages with Ana —"}},
	}
	for i, c := range cases {
		key := fmt.Sprintf("c%d", i)
		var systems []string
		for turn := range 2 {
			in := withAudience(inbound(key, fmt.Sprint("hello ", turn)), c.a)
			in.SenderID, in.SenderName = c.a.Person, "Ana"
			if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
				t.Fatal(r.Err)
			}
			reqs := env.model.Requests()
			systems = append(systems, reqs[len(reqs)-1].Messages[0].Content)
		}
		if systems[0] != systems[1] {
			t.Errorf("%v: the system message changed between turns:\n%s\n---\n%s", c.a, systems[0], systems[1])
		}
		sys := systems[0]
		readable := map[audience.Scope]bool{}
		for _, s := range c.a.Readable() {
			readable[s] = true
		}
		for s, tok := range tokens {
			if got := strings.Contains(sys, tok); got != readable[s] {
				t.Errorf("%v: scope %q shown %v, want %v", c.a, s, got, readable[s])
			}
		}
		if !strings.Contains(sys, "Shared voice: be kind.") {
			t.Errorf("%v: AGENTS.md is not shown", c.a)
		}
		for _, h := range c.headings {
			if !strings.Contains(sys, h) {
				t.Errorf("%v: no heading %q in\n%s", c.a, h, sys)
			}
		}
	}
}

// A new scope's files are the template's: its USER.md and MEMORY.md are
// left out, and the template's SOUL.md is shown once, not once per scope.
func TestPromptLeavesOutScopeSkeletons(t *testing.T) {
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
	in := withAudience(inbound("dm", "hello"), anaDM)
	if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
		t.Fatal(r.Err)
	}
	sys := env.model.Requests()[0].Messages[0].Content
	if n := strings.Count(sys, "## Soul ("); n != 1 {
		t.Errorf("SOUL.md shown %d times, want once:\n%s", n, sys)
	}
	if strings.Contains(sys, "# Users") || strings.Contains(sys, "# Long-term memory") {
		t.Errorf("a template skeleton is shown:\n%s", sys)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "scopes", string(anaDM.Home()), "USER.md")); err != nil {
		t.Errorf("the DM's scope folder was not created: %v", err)
	}
}

// In shared mode every audience's prompt is the operator's.
func TestSharedModeShowsTheRootToEveryone(t *testing.T) {
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, true)
	tokens := scopedWorkspace(t, env)
	in := withAudience(inbound("dm", "hello"), anaDM)
	if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
		t.Fatal(r.Err)
	}
	sys := env.model.Requests()[0].Messages[0].Content
	if want := env.g.deps.Prompts.Fixed(operatorView); sys != want || !strings.Contains(sys, tokens[audience.Default]) {
		t.Errorf("shared mode's prompt is not the operator's:\n%s", sys)
	}
}

// A conversation's file tools are rooted at its own scope's folder: every
// hostile path (climbing out, absolute, a link planted in the folder) is
// refused, and nothing of the root's files, the archive or another scope
// comes back; its own files read under their usual names. The operator's
// tools are the workspace's.
func TestScopeToolsReachOnlyTheirScope(t *testing.T) {
	var env *testEnv
	paths := []string{
		"USER.md", "../../USER.md", "../../memory/history.jsonl", "../" + string(bobDM.Home()) + "/USER.md",
		"../../scopes/" + string(bobDM.Home()) + "/USER.md", "", "/etc/passwd", "~/USER.md", "planted.md",
		"memory/history.jsonl", "..", ".",
	}
	var results []string
	step := 0
	env = scopeEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			results = append(results, last.Content)
		}
		if step < len(paths) {
			step++
			name, p := "read_file", paths[step-1]
			if p == "" {
				p = filepath.Join(env.ws, "USER.md") // the root's file, absolute
			}
			if p == ".." || p == "." {
				name = "list_dir"
			}
			args, _ := json.Marshal(map[string]string{"path": p})
			return llm.Response{FinishReason: llm.FinishToolCalls, ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("c", step), Name: name, Arguments: string(args)}}}, nil
		}
		return textReply("done"), nil
	}, false)
	env.g.cfg.MaxToolIterations = len(paths) + 5
	tokens := scopedWorkspace(t, env)
	if err := os.Symlink(filepath.Join(env.ws, "USER.md"), filepath.Join(env.ws, "scopes", string(anaDM.Home()), "planted.md")); err != nil {
		t.Fatal(err)
	}
	in := withAudience(inbound("dm", "read everything"), anaDM)
	in.SenderID = "UANA"
	if r := wait(t, mustSubmit(t, env, in)); r.Err != nil || r.Reply != "done" {
		t.Fatalf("turn: %+v", r)
	}
	if len(results) != len(paths) {
		t.Fatalf("%d tool results, want %d", len(results), len(paths))
	}
	if !strings.Contains(results[0], tokens[anaDM.Home()]) {
		t.Errorf("USER.md is not the DM's own: %q", results[0])
	}
	for i, r := range results {
		for s, tok := range tokens {
			if s != anaDM.Home() && strings.Contains(r, tok) {
				t.Errorf("read of %q returned scope %q's file: %q", paths[i], s, r)
			}
		}
		if strings.Contains(r, "cursor") || strings.Contains(r, env.ws) {
			t.Errorf("read of %q returned the archive or the workspace's location: %q", paths[i], r)
		}
	}
	if last := results[len(results)-1]; !strings.Contains(last, "SOUL.md") || strings.Contains(last, "scopes") || strings.Contains(last, "AGENTS.md") {
		t.Errorf("list_dir . is not the scope's folder: %q", last)
	}
}
