package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/workspace"
)

// The memory page names the people and channels its ids stand for, as
// Slack names them (users.info, conversations.info through the running
// adapter and the Slack fake): a person's scope, a private channel's, the
// conversation a memory line came from.
func TestWebShowsSlackNames(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"UANA": "Ana"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	ana := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	priv := audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: "G0PRIV"}
	hist, err := history.Open(filepath.Join(h.ws, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := hist.AppendIn(priv.Home(), "- The launch is on Tuesday.", "slack:G0PRIV")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, h.ws, ana.Home().Dir()+"/"+workspace.Memory, "# Long-term memory\n\n- Ana likes tea.\n")
	testkit.WriteFile(t, h.ws, priv.Home().Dir()+"/"+workspace.Memory,
		fmt.Sprintf("# Long-term memory\n\n- The launch is on Tuesday. <!-- durable 2026-11-20 src:%d -->\n", e.Cursor))
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	base := "http://" + addr
	waitWeb(t, gw, base)

	get := signedInAsOperator(t, h, base)
	index := get("/memory")
	for _, want := range []string{"— Ana", "— #chan-G0PRIV"} {
		if !strings.Contains(index, want) {
			t.Errorf("the memory index lacks %q:\n%s", want, index)
		}
	}
	came := get(fmt.Sprintf("/entries/%s?c=%d", priv.Home(), e.Cursor))
	if !strings.Contains(came, "slack:G0PRIV</code> #chan-G0PRIV") {
		t.Errorf("the provenance page does not name the channel:\n%s", came)
	}
}

// signedInAsOperator signs the operator in to the memory page at base with a
// link from dreamgate web-link, and returns a reader of its pages.
func signedInAsOperator(t *testing.T, h *harness, base string) func(path string) string {
	t.Helper()
	r := h.run("web-link")
	if r.code != 0 {
		t.Fatalf("web-link: %d %s", r.code, r.stderr)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) string {
		t.Helper()
		res, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	get(strings.TrimPrefix(strings.TrimSpace(r.stdout), base))
	if res, err := c.PostForm(base+"/signin", url.Values{"link": {"1"}}); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %v %v", res, err)
	}
	return get
}

// The memory page names Discord's people and channels as Discord shows
// them, through the running adapter and the Discord fake: a person's
// scope by the display name they chose (not their user name), a private
// channel's by its name.
func TestWebShowsDiscordNames(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("G1", fakediscord.Channel{ID: "C42", Name: "launch-plans", Type: fakediscord.ChannelText})
	dc.SetMember("G1", fakediscord.User{ID: "U7", Username: "ana_1987", GlobalName: "Ana"})
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()})
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	ana := audience.Audience{Kind: audience.Person, Platform: "discord", Person: "U7"}
	priv := audience.Audience{Kind: audience.Private, Platform: "discord", Team: "G1", Chat: "C42"}
	testkit.WriteFile(t, h.ws, ana.Home().Dir()+"/"+workspace.Memory, "# Long-term memory\n\n- Ana likes tea.\n")
	testkit.WriteFile(t, h.ws, priv.Home().Dir()+"/"+workspace.Memory, "# Long-term memory\n\n- The launch is on Tuesday.\n")
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	base := "http://" + addr
	waitWeb(t, gw, base)
	index := signedInAsOperator(t, h, base)("/memory")
	for _, want := range []string{"— Ana", "— #launch-plans"} {
		if !strings.Contains(index, want) {
			t.Errorf("the memory index lacks %q:\n%s", want, index)
		}
	}
	if strings.Contains(index, "ana_1987") {
		t.Errorf("the memory index names Ana by her user name:\n%s", index)
	}
}
