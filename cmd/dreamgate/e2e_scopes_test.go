package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// What is said in private stays private, through the built binary, the
// real Slack and Discord adapters and their fakes, and the memory
// pipeline's rule-following model: each place plants a secret and has it
// dreamed; then every place asks for every secret, reads files with its
// tools and runs the Dream commands. No prompt (system, messages, tool
// results), no post of a place holds a secret of a place its audience may
// not read; each secret is remembered where it was said (a new
// conversation there has it in its prompt and answers with it).

// place is one conversation of the test: where a person talks to the bot.
type place struct {
	name string
	aud  audience.Audience
	// key is the gateway's session key of the conversation.
	key string
	// fact plants the place's secret, ask asks for it: the fake model
	// answers a question with the memory line sharing most words with it.
	fact, secret, ask string
}

// world is a platform through its fake: say posts text as the place's
// person and returns the bot's answer (for /dream, once Dream is done);
// shown lists everything the bot showed in a place (posts, edits,
// command answers).
type world interface {
	say(t *testing.T, p place, text string) string
	shown(p place) []string
}

func isDreamDone(text string) bool {
	return (strings.HasPrefix(text, "Dream") && !strings.HasPrefix(text, "Dreaming")) || strings.HasPrefix(text, "I could not archive")
}

// chatKey is the conversation a chat request is for: the session key its
// newest user message's runtime header names ("" for the pipeline's own
// calls: archives and Dream).
func chatKey(r llmtest.Request) string {
	if len(r.Tools) == 0 {
		return ""
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		if strings.HasPrefix(m.Content, "## Findings to apply") {
			return "" // Dream's editing phase
		}
		_, rest, ok := strings.Cut(m.Content, "Conversation: ")
		if !ok {
			return ""
		}
		key, _, _ := strings.Cut(rest, ". Sender: ")
		return key
	}
	return ""
}

func requestText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// playScopes runs the scenario in places through w, whose gateway's model
// requests h records.
func playScopes(t *testing.T, h *harness, w world, places []place, reader place) {
	// Plant and dream each secret where it is said.
	for _, p := range places {
		if got := w.say(t, p, p.fact); got == "" {
			t.Fatalf("%s: no answer to the fact", p.name)
		}
		if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
			t.Errorf("%s: /dream answered %q", p.name, got)
		}
	}
	// Everyone asks for everything, and reaches for the files and the
	// Dream commands.
	for _, p := range append(slices.Clone(places), reader) {
		for _, q := range places {
			w.say(t, p, q.ask)
		}
		for _, text := range []string{
			"please read USER.md", "please read memory/MEMORY.md", "please read memory/history.jsonl",
			"please read ../../USER.md", "please read ../../memory/history.jsonl", "please read scopes/" + string(places[0].aud.Home()) + "/USER.md",
			"/dream-log", "/dream-restore", "/status",
		} {
			w.say(t, p, text)
		}
	}
	all := append(slices.Clone(places), reader)
	mayRead := func(p, q place) bool { return p.aud.MayRead(q.aud.Home()) }
	byKey := map[string]place{}
	for _, p := range all {
		byKey[p.key] = p
	}
	seen := map[string]bool{}
	leak := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !seen[msg] {
			seen[msg] = true
			t.Error(msg)
		}
	}
	chats := 0
	for _, r := range h.llm.Requests() {
		key := chatKey(r)
		if key == "" {
			continue
		}
		p, ok := byKey[key]
		if !ok {
			t.Errorf("a chat request for an unknown conversation %q", key)
			continue
		}
		chats++
		text := requestText(r)
		for _, q := range places {
			if !mayRead(p, q) && strings.Contains(text, q.secret) {
				leak("a prompt of %s (%s) holds %s's secret %s", p.name, p.aud, q.name, q.secret)
			}
		}
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool && strings.Contains(m.Content, `"cursor"`) {
				leak("a tool of %s read the archive: %.200q", p.name, m.Content)
			}
		}
	}
	if chats == 0 {
		t.Fatal("no chat request seen")
	}
	for _, p := range all {
		for _, text := range w.shown(p) {
			for _, q := range places {
				if !mayRead(p, q) && strings.Contains(text, q.secret) {
					leak("%s (%s) was shown %s's secret %s: %q", p.name, p.aud, q.name, q.secret, text)
				}
			}
		}
	}
	for _, problem := range checkFsck(h.ws) {
		t.Error(problem)
	}
	// Each secret is remembered where it was said: a new conversation
	// there has it in its prompt, and answers with it.
	for _, p := range places {
		w.say(t, p, "/new")
		n := len(h.llm.Requests())
		got := w.say(t, p, p.ask)
		var sys string
		for _, r := range h.llm.Requests()[n:] {
			if chatKey(r) == p.key {
				sys = r.Messages[0].Content
				break
			}
		}
		if !strings.Contains(sys, p.secret) || !strings.Contains(got, p.secret) {
			t.Errorf("%s does not remember its secret %s after /dream: answered %q; system prompt:\n%s", p.name, p.secret, got, sys)
		}
	}
}

// The case and the matrix through Slack: Ana's DM and a private
// channel each keep a secret; Bob in a public channel and in his own DM,
// another workspace and a Slack Connect channel see neither; every DM,
// private channel and public channel of the workspace shares the team's.
func TestScopesThroughSlack(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{
		TeamID: "T1",
		Users:  map[string]string{"UANA": "Ana", "UBOB": "Bob", "UDORA": "Dora"},
		// Carl is of the other workspace.
		People: []fakeslack.Person{{ID: "UCARL", Name: "Carl", Team: "T2"}},
		Conversations: []fakeslack.Conversation{
			{ID: "CCONNECT", ExtShared: true},
			{ID: "GFALCON", Private: true},
		},
	})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}
	team1 := func(k audience.Kind, chat, person string) audience.Audience {
		a := audience.Audience{Kind: k, Platform: "slack", Team: "T1", Chat: chat, Person: person}
		if k == audience.Shared {
			a.Team = "T1"
		}
		return a
	}
	places := []place{
		{name: "Ana's DM", aud: team1(audience.Person, "", "UANA"), key: "slack:DANA",
			fact: "FACT: Ana salary band is K7Q2Z9. Please keep that between us.", secret: "K7Q2Z9", ask: "What is Ana salary band?"},
		{name: "the private channel", aud: team1(audience.Private, "GFALCON", ""), key: "slack:GFALCON",
			fact: "FACT: Project Falcon launch code name is VORTEXPLUM, only this channel knows.", secret: "VORTEXPLUM", ask: "What is the Project Falcon launch code name?"},
		{name: "Bob's DM", aud: team1(audience.Person, "", "UBOB"), key: "slack:DBOB",
			fact: "FACT: Bob locker combination is LOCKER4417.", secret: "LOCKER4417", ask: "What is Bob locker combination?"},
		{name: "the public channel", aud: team1(audience.Team, "", ""), key: "slack:CGENERAL",
			fact: "FACT: The team release train leaves on THURSDAYTRAIN.", secret: "THURSDAYTRAIN", ask: "When does the team release train leave?"},
		{name: "the Slack Connect channel", aud: team1(audience.Shared, "CCONNECT", ""), key: "slack:CCONNECT",
			fact: "FACT: The partner contract number is PARTNER5150.", secret: "PARTNER5150", ask: "What is the partner contract number?"},
		{name: "another workspace's channel", aud: audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T2"}, key: "slack:COTHER",
			fact: "FACT: The other workspace wifi password is WIFIB9876.", secret: "WIFIB9876", ask: "What is the other workspace wifi password?"},
	}
	for _, p := range places {
		w.users[p.key], w.teams[p.key] = "UANA", p.aud.Team
	}
	w.users["slack:DBOB"], w.users["slack:COTHER"], w.users["slack:CCONNECT"] = "UBOB", "UCARL", "UDORA"
	w.teams["slack:CCONNECT"] = "T1"
	bobPublic := place{name: "Bob in the public channel", aud: team1(audience.Team, "", ""), key: "slack:CBOBS"}
	w.users[bobPublic.key], w.teams[bobPublic.key] = "UBOB", "T1"
	playScopes(t, h, w, places, bobPublic)
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.stderr.String())
	}
}

// slackWorld is the Slack fake as the people of the test use it.
type slackWorld struct {
	sl    *fakeslack.Server
	gw    *gatewayProc
	users map[string]string // session key -> the person who speaks there
	teams map[string]string // session key -> the workspace
}

func (w *slackWorld) channel(p place) string { return strings.TrimPrefix(p.key, "slack:") }

func (w *slackWorld) say(t *testing.T, p place, text string) string {
	t.Helper()
	ch := w.channel(p)
	before := len(w.shown(p))
	msg := text
	if !strings.HasPrefix(ch, "D") {
		msg = "<@" + w.sl.BotUserID() + "> " + text
	}
	if _, err := w.sl.InjectPost(fakeslack.Event{Channel: ch, User: w.users[p.key], Team: w.teams[p.key], Text: msg}); err != nil {
		t.Fatal(err)
	}
	return waitShown(t, w, p, before, text, w.gw)
}

func (w *slackWorld) shown(p place) []string {
	ch := w.channel(p)
	var out []string
	for _, post := range w.sl.Posts() {
		if post.Channel == ch {
			out = append(out, post.Text)
		}
	}
	return out
}

// waitShown waits for the bot's answer to text in p, after the first
// before things shown there: the first one for a chat turn or a command,
// Dream's report for /dream.
func waitShown(t *testing.T, w world, p place, before int, text string, gw *gatewayProc) string {
	t.Helper()
	// A Dream of months of memory under a loaded machine's other tests
	// may take a while; this waits for the answer, it times nothing.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := w.shown(p)
		for _, s := range got[min(before, len(got)):] {
			if text != "/dream" || isDreamDone(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no answer to %q within 2 minutes (shown %q); log:\n%s", p.name, text, got[min(before, len(got)):], gw.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The same through Discord: two servers, a public and a private channel,
// channels hidden from a role and from a member (#managers, hidden from
// the interns' role 7077 and from member 666, with its thread; #hr, hidden
// from member 666 only), and DMs (which belong to no server, so they read
// only their person's memory). Bob, an intern, reads the public channels.
func TestScopesThroughDiscord(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.SetRole("1001", fakediscord.Role{ID: "7077", Name: "interns", Permissions: fakediscord.DefaultEveryone})
	dc.SetMember("1001", fakediscord.User{ID: "502"}, "7077")
	dc.SetMember("1001", fakediscord.User{ID: "666"})
	denyView := func(id string, typ int) fakediscord.Overwrite {
		return fakediscord.Overwrite{ID: id, Type: typ, Deny: fakediscord.PermViewChannel}
	}
	dc.AddGuild("1001", fakediscord.Channel{ID: "2001", Name: "general", Type: fakediscord.ChannelText},
		fakediscord.Channel{ID: "2002", Name: "falcon", Type: fakediscord.ChannelText, Overwrites: []fakediscord.Overwrite{fakediscord.Hidden("1001")}},
		fakediscord.Channel{ID: "2003", Name: "random", Type: fakediscord.ChannelText},
		fakediscord.Channel{ID: "2004", Name: "managers", Type: fakediscord.ChannelText,
			Overwrites: []fakediscord.Overwrite{denyView("7077", fakediscord.OverwriteRole), denyView("666", fakediscord.OverwriteMember)}},
		fakediscord.Channel{ID: "2005", Name: "budget", ParentID: "2004", Type: fakediscord.ChannelPublicThread},
		fakediscord.Channel{ID: "2006", Name: "hr", Type: fakediscord.ChannelText,
			Overwrites: []fakediscord.Overwrite{denyView("666", fakediscord.OverwriteMember)}})
	dc.AddGuild("1002", fakediscord.Channel{ID: "3001", Name: "other", Type: fakediscord.ChannelText})
	dc.AddChannel(fakediscord.Channel{ID: "4001", Type: fakediscord.ChannelDM})
	dc.AddChannel(fakediscord.Channel{ID: "4002", Type: fakediscord.ChannelDM})
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(), "slashCommands": false, "stream": false})
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	w := &discordWorld{dc: dc, gw: gw, users: map[string]string{}, dm: map[string]bool{"4001": true, "4002": true}}
	places := []place{
		{name: "Ana's DM", aud: audience.Audience{Kind: audience.Person, Platform: "discord", Person: "501"}, key: "discord:4001",
			fact: "FACT: Ana salary band is K7Q2Z9. Please keep that between us.", secret: "K7Q2Z9", ask: "What is Ana salary band?"},
		{name: "the private channel", aud: audience.Audience{Kind: audience.Private, Platform: "discord", Team: "1001", Chat: "2002"}, key: "discord:2002",
			fact: "FACT: Project Falcon launch code name is VORTEXPLUM, only this channel knows.", secret: "VORTEXPLUM", ask: "What is the Project Falcon launch code name?"},
		{name: "Bob's DM", aud: audience.Audience{Kind: audience.Person, Platform: "discord", Person: "502"}, key: "discord:4002",
			fact: "FACT: Bob locker combination is LOCKER4417.", secret: "LOCKER4417", ask: "What is Bob locker combination?"},
		{name: "the public channel", aud: audience.Audience{Kind: audience.Team, Platform: "discord", Team: "1001"}, key: "discord:2001",
			fact: "FACT: The team release train leaves on THURSDAYTRAIN.", secret: "THURSDAYTRAIN", ask: "When does the team release train leave?"},
		{name: "another server's channel", aud: audience.Audience{Kind: audience.Team, Platform: "discord", Team: "1002"}, key: "discord:3001",
			fact: "FACT: The other server wifi password is WIFIB9876.", secret: "WIFIB9876", ask: "What is the other server wifi password?"},
		{name: "#managers", aud: audience.Audience{Kind: audience.Private, Platform: "discord", Team: "1001", Chat: "2004"}, key: "discord:2004",
			fact: "FACT: The managers bonus pool is BONUSPOOL31.", secret: "BONUSPOOL31", ask: "What is the managers bonus pool?"},
		{name: "#managers' thread", aud: audience.Audience{Kind: audience.Private, Platform: "discord", Team: "1001", Chat: "2004"}, key: "discord:2004:thread:2005",
			fact: "FACT: The layoff list code is LAYOFFS8842.", secret: "LAYOFFS8842", ask: "What is the layoff list code?"},
		{name: "#hr", aud: audience.Audience{Kind: audience.Private, Platform: "discord", Team: "1001", Chat: "2006"}, key: "discord:2006",
			fact: "FACT: The complaint about member 666 is case HRCASE5521.", secret: "HRCASE5521", ask: "What is the complaint case about member 666?"},
	}
	for _, p := range places {
		w.users[p.key] = "501"
	}
	w.users["discord:4002"], w.users["discord:3001"] = "502", "503"
	bobPublic := place{name: "Bob in another public channel", aud: audience.Audience{Kind: audience.Team, Platform: "discord", Team: "1001"}, key: "discord:2003"}
	w.users[bobPublic.key] = "502"
	playScopes(t, h, w, places, bobPublic)
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.stderr.String())
	}
}

// discordWorld is the Discord fake as the people of the test use it.
type discordWorld struct {
	dc    *fakediscord.Server
	gw    *gatewayProc
	users map[string]string // session key -> the person who speaks there
	dm    map[string]bool
}

// channel is where p's messages are posted: its thread, or its channel.
func (w *discordWorld) channel(p place) string {
	ch := strings.TrimPrefix(p.key, "discord:")
	if _, thread, ok := strings.Cut(ch, ":thread:"); ok {
		return thread
	}
	return ch
}

func (w *discordWorld) say(t *testing.T, p place, text string) string {
	t.Helper()
	ch := w.channel(p)
	before := len(w.shown(p))
	msg := text
	if !w.dm[ch] {
		msg = "<@" + w.dc.BotID() + "> " + text
	}
	id := w.users[p.key]
	if _, err := w.dc.InjectMessage(fakediscord.Message{ChannelID: ch, Author: fakediscord.User{ID: id, Username: "user" + id}, Content: msg}); err != nil {
		t.Fatal(err)
	}
	return waitShown(t, w, p, before, text, w.gw)
}

func (w *discordWorld) shown(p place) []string {
	ch := w.channel(p)
	var out []string
	for _, s := range w.dc.Sent() {
		if s.ChannelID == ch {
			out = append(out, s.Content)
		}
	}
	for _, e := range w.dc.Edits() {
		if e.ChannelID == ch {
			out = append(out, e.Content)
		}
	}
	return out
}
