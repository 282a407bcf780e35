package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/workspace"
)

var signInLinkRe = regexp.MustCompile(`http://[^\s<>|]+/signin\?link=[A-Za-z0-9_.\-]+`)

// A person signs in to the memory page with the link /web-link sends to
// their DM, through the binary and the real Slack adapter: the page then
// shows the team's memory and theirs, never another person's or the
// operator's; the link works once; asked in a channel, the bot sends no
// link.
func TestWebLinkThroughSlack(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	h.set("web.token", testWebToken)
	ana := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	bob := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}
	team := audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	for s, line := range map[audience.Scope]string{
		team.Home():      "- The team ships on Fridays.",
		ana.Home():       "- Ana's locker code is ANALOCK42.",
		bob.Home():       "- Bob's locker code is BOBLOCK77.",
		audience.Default: "- The operator's spare key is OPKEY99.",
	} {
		writeMemory(t, h, s, workspace.Memory, "# Long-term memory\n\n"+line+"\n")
	}
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	waitWeb(t, gw, "http://"+addr)
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{"slack:DANA": "UANA", "slack:CGENERAL": "UANA"},
		teams: map[string]string{"slack:DANA": "T1", "slack:CGENERAL": "T1"}}

	inChannel := w.say(t, place{name: "the public channel", key: "slack:CGENERAL"}, "/web-link")
	if signInLinkRe.MatchString(inChannel) || !strings.Contains(inChannel, "direct message") {
		t.Errorf("/web-link in a channel: %q", inChannel)
	}
	reply := w.say(t, place{name: "Ana's DM", key: "slack:DANA"}, "/web-link")
	link := signInLinkRe.FindString(reply)
	if link == "" {
		t.Fatalf("no link in Ana's DM: %q\nlog:\n%s", reply, gw.stderr.String())
	}

	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	base := "http://" + addr
	get := func(c *http.Client, path string) (int, string) {
		t.Helper()
		u := path
		if strings.HasPrefix(path, "/") {
			u = base + path
		}
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	signIn := func(c *http.Client) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"link": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	c := browser()
	if code, page := get(c, link); code != http.StatusOK || !strings.Contains(page, "slack user UANA") {
		t.Fatalf("the link's page: %d\n%s", code, page)
	}
	if code := signIn(c); code != http.StatusSeeOther {
		t.Fatalf("signing in with the link: %d", code)
	}
	code, page := get(c, "/memory")
	if code != http.StatusOK || !strings.Contains(page, "/memory/"+string(team.Home())) || !strings.Contains(page, "/memory/"+string(ana.Home())) ||
		strings.Contains(page, string(bob.Home())) || strings.Contains(page, "/memory/default") {
		t.Errorf("Ana's memory index: %d\n%s", code, page)
	}
	if code, page := get(c, "/memory/"+string(ana.Home())); code != http.StatusOK || !strings.Contains(page, "ANALOCK42") {
		t.Errorf("Ana's own memory: %d\n%s", code, page)
	}
	for _, path := range []string{"/memory/" + string(bob.Home()), "/memory/default"} {
		if code, page := get(c, path); code != http.StatusNotFound || strings.Contains(page, "BOBLOCK77") || strings.Contains(page, "OPKEY99") {
			t.Errorf("%s for Ana: %d", path, code)
		}
	}
	// The link signed in once.
	other := browser()
	if code, _ := get(other, link); code != http.StatusUnauthorized {
		t.Errorf("the link a second time: %d", code)
	}
}

// Slack lets a person type a slash command in a DM with another person,
// which the bot is not in; the command carries that DM's id as one typed
// in the person's DM with the bot does. Typed there, by Ana or by Bob,
// /web-link sends no sign-in link and /why shows none of Ana's memory,
// through the binary and the real Slack adapter; in Ana's DM with the bot
// both still answer as hers.
func TestSlackCommandsInADMBetweenTwoPeopleThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"},
		Conversations: []fakeslack.Conversation{{ID: "DANABOB", Between: []string{"UANA", "UBOB"}}}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	addr := freeAddr(t)
	h.set("web", map[string]any{"enabled": true, "addr": addr, "token": testWebToken})
	ana := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	writeMemory(t, h, ana.Home(), workspace.Memory, "# Long-term memory\n\n- Ana's locker code is ANALOCK42.\n")
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	waitWeb(t, gw, "http://"+addr)
	slash := func(channel, user, command, text string) string {
		t.Helper()
		n := len(sl.Responses())
		if _, _, err := sl.InjectSlashCommand(fakeslack.SlashCommand{Command: command, Text: text, User: user, Channel: channel}); err != nil {
			t.Fatal(err)
		}
		resps, err := sl.WaitResponses(waitCtx(t), n+1)
		if err != nil {
			t.Fatalf("no answer to %s in %s: %v; log:\n%s", command, channel, err, gw.stderr.String())
		}
		return resps[n].Text
	}
	for _, user := range []string{"UANA", "UBOB"} {
		if got := slash("DANABOB", user, "/web-link", ""); signInLinkRe.MatchString(got) || !strings.Contains(got, "direct message") {
			t.Errorf("/web-link by %s in the DM between Ana and Bob: %q", user, got)
		}
		if got := slash("DANABOB", user, "/why", "locker code"); strings.Contains(got, "ANALOCK42") {
			t.Errorf("/why by %s in the DM between Ana and Bob shows Ana's memory: %q", user, got)
		}
	}
	if got := slash("DANA", "UANA", "/web-link", ""); !signInLinkRe.MatchString(got) {
		t.Errorf("/web-link in Ana's DM with the bot: %q", got)
	}
	if got := slash("DANA", "UANA", "/why", "locker code"); !strings.Contains(got, "ANALOCK42") {
		t.Errorf("/why in Ana's DM with the bot: %q", got)
	}
	for _, e := range sl.Ephemerals() {
		if e.Channel == "DANABOB" && (signInLinkRe.MatchString(e.Text) || strings.Contains(e.Text, "ANALOCK42")) {
			t.Errorf("an ephemeral answer in %s: %q", e.Channel, e.Text)
		}
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.stderr.String())
	}
}
