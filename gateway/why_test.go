package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// writeMemory writes text as scope s's file rel under ws.
func writeMemory(t *testing.T, ws string, s audience.Scope, rel, text string) {
	t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(s.Dir()), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// /why shows the lines of the scopes the asker may read with their
// priority, date and source conversations; a source of a scope the asker
// may not read is counted, never named, and another scope's lines are not
// searched at all.
func TestWhyShowsSourcesWithinTheAudience(t *testing.T) {
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
	hist, err := history.Open(filepath.Join(env.ws, workspace.MemoryDir), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.g.deps.Provenance = hist
	team, ana := slackTeam.Home(), anaDM.Home()
	add := func(s audience.Scope, key string) int {
		e, err := hist.AppendIn(s, "- something was said", key)
		if err != nil {
			t.Fatal(err)
		}
		return e.Cursor
	}
	c1 := add(team, "slack:T1:CPUBLIC")
	c2 := add(ana, "slack:T1:DANA")
	c3 := add(team, "slack:T1:CGENERAL")
	writeMemory(t, env.ws, team, workspace.User, fmt.Sprintf(
		"# Users\n\n- The team prefers dark mode. <!-- durable 2026-11-26 src:%d,%d,%d,999 -->\n- Bob likes tea.\n", c1, c2, c3))
	writeMemory(t, env.ws, team, workspace.Cold, "- Light mode was tried in 2025. <!-- ephemeral 2025-03-01 -->\n")
	writeMemory(t, env.ws, ana, workspace.User, fmt.Sprintf("- Ana secretly prefers dark mode too. <!-- permanent 2026-11-20 src:%d -->\n", c2))

	ask := func(a audience.Audience, args string) string {
		t.Helper()
		in := withAudience(inbound(fmt.Sprint("why-", a.Kind, a.Team, a.Person), "/why "+args), a)
		in.SenderID, in.SenderName = a.Person, "Ana"
		r := wait(t, mustSubmit(t, env, in))
		return r.Reply
	}
	pub := ask(slackTeam, "dark MODE")
	for _, want := range []string{
		`1 remembered line holds "dark mode":`,
		"- The team prefers dark mode.\n  durable, last confirmed 2026-11-26 — USER.md, the team's memory",
		"from slack:T1:CPUBLIC, archived ",
		"from slack:T1:CGENERAL, archived ",
		"and 1 from conversations not shown here",
		"and 1 no longer in the archive (compacted)",
	} {
		if !strings.Contains(pub, want) {
			t.Errorf("the public channel's /why lacks %q:\n%s", want, pub)
		}
	}
	if strings.Contains(pub, "DANA") || strings.Contains(pub, "secretly") {
		t.Errorf("the public channel's /why shows the DM:\n%s", pub)
	}

	dm := ask(anaDM, "dark mode")
	for _, want := range []string{
		`2 remembered lines hold "dark mode":`,
		"- Ana secretly prefers dark mode too.\n  permanent, last confirmed 2026-11-20 — USER.md, your direct messages' memory\n  from slack:T1:DANA",
		"from slack:T1:DANA, archived ", // the team line's DM source: readable here
	} {
		if !strings.Contains(dm, want) {
			t.Errorf("the DM's /why lacks %q:\n%s", want, dm)
		}
	}
	if strings.Contains(dm, "not shown here") {
		t.Errorf("the DM may read every source, yet some are hidden:\n%s", dm)
	}

	cold := ask(slackTeam, "light")
	if !strings.Contains(cold, "ephemeral, last confirmed 2025-03-01 — cold memory (memory/COLD.md), the team's memory\n  No recorded source") {
		t.Errorf("a cold-memory line:\n%s", cold)
	}
	if got := ask(slackTeam, "Bob"); !strings.Contains(got, "durable, undated") {
		t.Errorf("a line without metadata:\n%s", got)
	}
	if got := ask(team2, "dark mode"); got != `No remembered line holds "dark mode".` {
		t.Errorf("another team's /why: %q", got)
	}
	if got := ask(slackTeam, "?!"); !strings.HasPrefix(got, "Which fact?") {
		t.Errorf("/why without words: %q", got)
	}
}
