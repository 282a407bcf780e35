package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// A scope's memory file that is a symbolic link — planted by hand, or left
// by a tool that follows none of our rules — is never followed, through
// the binary and the Slack fake: the team's USER.md and cold memory link
// to a file outside the workspace, Ana's MEMORY.md to the operator's
// USER.md. No prompt of #general or of Ana's DM, no /why, no answer and
// no page or search of Ana's holds what those files hold; the prompts,
// /why and the pages still show the scopes' own files (one link left /why
// and the scope's page with nothing but an error).
func TestAMemoryLinkIsNeverFollowedThroughSlack(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	addr := freeAddr(t)
	h.set("web", map[string]any{"enabled": true, "addr": addr, "token": testWebToken})
	h.llm.SetResponder(llmtest.MemoryModel)

	team, ana := plantMemoryLinks(t, h)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	waitWeb(t, gw, "http://"+addr)
	w := &audienceWorld{h: h, web: "http://" + addr, slackWorld: &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}}
	general, dm := w.at("#general", "CGENERAL", "UANA"), w.at("Ana's DM", "DANA", "UANA")

	secrets := []string{"VAULT4711", "OPSAFE88"}
	leaks := func(where, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %s, read through a link:\n%s", where, s, text)
			}
		}
	}
	for _, c := range []struct {
		p      place
		ask    string
		own    string // a line of the scopes' own files, which the prompt shows
		why    string
		safe   string
		whyOwn string // words of own, which /why finds
	}{
		{general, "What is the vault code?", "TEAMFRIDAY", "vault code", "", "ships"},
		{dm, "What is the safe code? And the vault code?", "ANATEA", "safe code", "vault code", "tea"},
	} {
		answer, prompt := w.ask(t, c.p, c.ask)
		leaks(c.p.name+"'s answer", answer)
		leaks(c.p.name+"'s prompt", prompt)
		if !strings.Contains(prompt, c.own) {
			t.Errorf("%s's prompt lacks its scopes' own line %s:\n%s", c.p.name, c.own, prompt)
		}
		for _, words := range []string{c.why, c.safe} {
			if words != "" {
				leaks(c.p.name+"'s /why "+words, w.slash(t, c.p, "/why", words))
			}
		}
		if got := w.slash(t, c.p, "/why", c.whyOwn); !strings.Contains(got, c.own) {
			t.Errorf("%s's /why %s lacks its scopes' own line %s:\n%s", c.p.name, c.whyOwn, c.own, got)
		}
	}
	link := signInLinkRe.FindString(w.say(t, dm, "/web-link"))
	if link == "" {
		t.Fatal("no sign-in link in Ana's DM")
	}
	page := signedIn(t, w.web, link)
	for _, c := range []struct{ path, own string }{
		{"/memory/" + string(team), "TEAMFRIDAY"}, {"/memory/" + string(ana), "ANATEA"}, {"/search?q=vault", ""}, {"/search?q=safe", ""},
	} {
		// A scope with a link in it shows its other files, never what
		// the link points at.
		code, body := page(c.path)
		leaks("the page "+c.path, body)
		if c.own != "" && (code != http.StatusOK || !strings.Contains(body, c.own)) {
			t.Errorf("the page %s (%d) lacks the scope's own line %s:\n%s", c.path, code, c.own, body)
		}
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.stderr.String())
	}
}

// plantMemoryLinks writes the scopes' own files and the links among them,
// and returns the team's scope and Ana's. It skips the test where the file
// system has no symbolic links.
func plantMemoryLinks(t *testing.T, h *harness) (team, ana audience.Scope) {
	t.Helper()
	team, ana = slackT1(audience.Team, "", "").Home(), slackT1(audience.Person, "", "UANA").Home()
	outside := filepath.Join(t.TempDir(), "vault.md")
	testkit.WriteFile(t, filepath.Dir(outside), "vault.md", "# Vault\n\n- The vault code is VAULT4711.\n")
	testkit.WriteFile(t, h.ws, workspace.User, "# User\n\n- The operator's safe code is OPSAFE88.\n")
	testkit.WriteFile(t, h.ws, team.Dir()+"/"+workspace.Memory, "# Long-term memory\n\n- The team ships on TEAMFRIDAY.\n")
	testkit.WriteFile(t, h.ws, ana.Dir()+"/"+workspace.User, "# User\n\n- Ana drinks ANATEA tea.\n")
	for link, target := range map[string]string{
		team.Dir() + "/" + workspace.User:  outside,
		team.Dir() + "/memory/COLD.md":     outside,
		ana.Dir() + "/" + workspace.Memory: filepath.Join(h.ws, workspace.User),
	} {
		p := filepath.Join(h.ws, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	return team, ana
}
