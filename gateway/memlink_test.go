package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// A scope's memory file that is a symbolic link (a committed link a
// restore brought back, or one planted by hand) is never followed: the
// prompt shows nothing of it and /why finds nothing in it, though the file
// it points at holds the words.
func TestAMemoryLinkIsNeverFollowed(t *testing.T) {
	ws := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("- The vault code is 4711.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	team := slackTeam.Home()
	writeMemory(t, ws, team, workspace.Soul, "- Answer briefly.\n")
	for _, rel := range []string{workspace.User, workspace.Cold} {
		p := filepath.Join(ws, filepath.FromSlash(team.Dir()), filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, p); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	prompt := NewPromptBuilder(ws, nil, nil).Fixed(MemoryView{Audience: slackTeam, Scopes: []audience.Scope{team}})
	if strings.Contains(prompt, "4711") {
		t.Errorf("the prompt followed a link:\n%s", prompt)
	}
	if !strings.Contains(prompt, "Answer briefly.") {
		t.Errorf("the scope's own file is missing:\n%s", prompt)
	}
	ms, total, _ := FindWhy(memory.New(memory.NewDisk(ws), false), []audience.Scope{team}, "vault code", 8, nil)
	if total != 0 || len(ms) != 0 {
		t.Errorf("/why followed a link: %+v", ms)
	}
}

// A line a later one replaced is no longer current: left in a memory file
// (a hand edit, a restore), the prompt does not show it, nor count it.
func TestPromptNeverShowsASupersededLine(t *testing.T) {
	ws := t.TempDir()
	team := slackTeam.Home()
	writeMemory(t, ws, team, workspace.User, "# Users\n\n- Ana's office is Harbour. <!-- durable 2026-10-01 id:00b1 superseded-by:00c2 -->\n"+
		"- Ana's office is Canal Road. <!-- durable 2026-12-01 id:00c2 replaces:00b1 -->\n")
	p := NewPromptBuilder(ws, nil, nil)
	prompt := p.Fixed(MemoryView{Audience: slackTeam, Scopes: []audience.Scope{team}})
	if strings.Contains(prompt, "Harbour") || !strings.Contains(prompt, "- Ana's office is Canal Road. (Dec 2026)") {
		t.Errorf("the prompt:\n%s", prompt)
	}
	if u := p.HotUsage(team); u.Total != 1 { // the current line alone
		t.Errorf("usage %+v", u)
	}
}

// One link in a scope leaves out only that file: /why in every
// conversation that reads the scope still finds the lines of its other
// files and of the other scopes it reads (it answered "I could not read
// memory…" in each of them), and the operator is told once in the log,
// however often /why meets the link.
func TestALinkInAScopeLeavesOnlyThatFileOutOfWhy(t *testing.T) {
	var log testkit.Buffer
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, func(c *Config, d *Deps) {
		d.Logger = slog.New(slog.NewTextHandler(&log, nil))
		d.Memory = memory.New(memory.NewDisk(c.Workspace), false).WithLogger(d.Logger)
	})
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("- The vault code for Fridays is VAULTSECRET.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	team, ana := slackTeam.Home(), anaDM.Home()
	writeMemory(t, env.ws, team, workspace.Memory, "# Long-term memory\n\n- The team ships on Fridays.\n")
	writeMemory(t, env.ws, team, workspace.Cold, "- The team shipped on Mondays in 2025, then Fridays. <!-- durable 2025-03-01 -->\n")
	writeMemory(t, env.ws, ana, workspace.User, "- Ana bakes on Fridays.\n")
	p := filepath.Join(env.ws, filepath.FromSlash(team.Dir()), workspace.User)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		a    audience.Audience
		want []string
	}{
		{slackTeam, []string{`2 remembered lines hold "fridays":`, "- The team ships on Fridays.", "- The team shipped on Mondays in 2025"}},
		{anaDM, []string{`3 remembered lines hold "fridays":`, "- The team ships on Fridays.", "- Ana bakes on Fridays."}},
		{slackTeam, []string{"- The team ships on Fridays."}}, // asked again: the log says it once
	} {
		in := withAudience(inbound(fmt.Sprint("why-link-", i), "/why Fridays"), c.a)
		in.SenderID, in.SenderName = c.a.Person, "Ana"
		got := wait(t, mustSubmit(t, env, in)).Reply
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s's /why lacks %q:\n%s", c.a.Kind, w, got)
			}
		}
		if strings.Contains(got, "VAULTSECRET") || strings.Contains(got, "could not read") {
			t.Errorf("%s's /why:\n%s", c.a.Kind, got)
		}
	}
	if n := strings.Count(log.String(), "a memory file is left out"); n != 1 {
		t.Errorf("the log tells of the link %d times, want once:\n%s", n, log.String())
	}
}
