package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// Who sees what when an audience is not what the adapter assumed, or
// changes after it looked, through the built binary, the real Slack
// adapter and a fake Slack that sends the app the events its manifest
// subscribes to: a guest's DM, a guest in a public channel, a person of
// another organisation typing /why in a DM, a guest joining and leaving
// a channel, a private channel made public, a public one made private, a
// channel shared with another organisation and unshared, a channel whose
// members cannot be listed. The team's secret is said and dreamed in
// #general; no prompt (system, messages, tool results), post or command
// answer of an audience that may not read the team's memory holds it,
// and every fact is still remembered in its own audience.

// teamSecret is what the team said in a public channel.
const (
	teamFact   = "FACT: The team release train leaves on THURSDAYTRAIN."
	teamSecret = "THURSDAYTRAIN"
	teamAsk    = "When does the team release train leave?"
)

// audienceWorld is a gateway on a fake Slack workspace T1 with Ana and Bob
// (full members), Gus (a guest) and Eve (of another organisation), whose
// team has said and dreamed teamFact in #general.
type audienceWorld struct {
	*slackWorld
	h   *harness
	web string // the memory page's base URL
}

func startAudienceWorld(t *testing.T, convs ...fakeslack.Conversation) *audienceWorld {
	t.Helper()
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{
		TeamID: "T1",
		Events: slackManifestEvents(t),
		People: []fakeslack.Person{
			{ID: "UANA", Name: "Ana"}, {ID: "UBOB", Name: "Bob"},
			{ID: "UGUS", Name: "Gus", Guest: true}, {ID: "UEVE", Name: "Eve", Team: "TOTHER"},
		},
		Conversations: append(convs, fakeslack.Conversation{ID: "CGENERAL", Members: []string{"UANA", "UBOB"}}),
	})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.llm.SetResponder(llmtest.MemoryModel)
	addr := freeAddr(t)
	h.set("web", map[string]any{"enabled": true, "addr": addr, "token": testWebToken})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	waitWeb(t, gw, "http://"+addr)
	w := &audienceWorld{h: h, web: "http://" + addr, slackWorld: &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}}
	general := w.at("#general", "CGENERAL", "UANA")
	w.say(t, general, teamFact)
	if got := w.say(t, general, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Fatalf("/dream in #general: %q", got)
	}
	if _, prompt := w.ask(t, general, teamAsk); !strings.Contains(prompt, teamSecret) {
		t.Fatalf("the team does not remember its secret:\n%s", prompt)
	}
	return w
}

// at is the conversation in channel where user speaks.
func (w *audienceWorld) at(name, channel, user string) place {
	key := "slack:" + channel
	w.users[key], w.teams[key] = user, "T1"
	return place{name: name, key: key}
}

// ask says text in p and returns the answer and everything the model was
// shown for it: the system prompt, the messages and the tool results.
func (w *audienceWorld) ask(t *testing.T, p place, text string) (answer, prompt string) {
	t.Helper()
	n := len(w.h.llm.Requests())
	answer = w.say(t, p, text)
	var b strings.Builder
	for _, r := range w.h.llm.Requests()[n:] {
		if chatKey(r) == p.key {
			b.WriteString(requestText(r))
		}
	}
	if b.Len() == 0 {
		t.Fatalf("%s: no chat request for %q", p.name, text)
	}
	return answer, b.String()
}

// slash runs a slash command in p's channel as its person and returns the
// answer (sent through the command's response_url).
func (w *audienceWorld) slash(t *testing.T, p place, command, text string) string {
	t.Helper()
	n := len(w.sl.Responses())
	if _, _, err := w.sl.InjectSlashCommand(fakeslack.SlashCommand{Command: command, Text: text, User: w.users[p.key], Channel: w.channel(p)}); err != nil {
		t.Fatal(err)
	}
	resps, err := w.sl.WaitResponses(waitCtx(t), n+1)
	if err != nil {
		t.Fatalf("%s: no answer to %s: %v; log:\n%s", p.name, command, err, w.gw.stderr.String())
	}
	return resps[n].Text
}

// announced waits until the adapter has taken in the events a change sent
// (each is acked once handled); a change that sent none fails the test,
// since the manifest subscribes to every one.
func (w *audienceWorld) announced(t *testing.T, ds []fakeslack.Delivery, err error) {
	t.Helper()
	if err != nil || len(ds) == 0 {
		t.Fatalf("the change was not announced (%d events, %v): does the manifest subscribe to it?", len(ds), err)
	}
	for _, d := range ds {
		if err := w.sl.WaitAcked(waitCtx(t), d.EnvelopeID); err != nil {
			t.Fatal(err)
		}
	}
}

// sees fails unless the model was shown the team's secret in p, and says
// so with what.
func sees(t *testing.T, p place, prompt string, want bool) {
	t.Helper()
	if got := strings.Contains(prompt, teamSecret); got != want {
		t.Errorf("%s: the team's memory shown %v, want %v:\n%s", p.name, got, want, prompt)
	}
}

// signedIn signs in to the memory page at base with a sign-in link, as a
// browser does, and returns a function that reads a page as that person.
func signedIn(t *testing.T, base, link string) func(path string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		t.Helper()
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
	if code, _ := get(link); code != http.StatusOK {
		t.Fatalf("the sign-in link's page: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"link": {"1"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in with the link: %d", res.StatusCode)
	}
	return func(path string) (int, string) { return get(base + path) }
}

// scopeFile is the text of a scope's MEMORY.md ("" when it has none).
func scopeFile(t *testing.T, h *harness, s audience.Scope) string {
	t.Helper()
	return string(readMemoryFile(t, h.ws, path.Join(s.Dir(), workspace.Memory)))
}

func slackT1(kind audience.Kind, chat, person string) audience.Audience {
	return audience.Audience{Kind: kind, Platform: "slack", Team: "T1", Chat: chat, Person: person}
}

// People, not payloads: a guest's DM and a guest in a public channel read
// no team memory, and neither does a person of another organisation
// typing /why in a DM (a slash command carries no user_team; users.info
// says who she is). A guest's /web-link reads what their DM reads.
func TestSlackGuestsAndOutsidersThroughTheBinary(t *testing.T) {
	w := startAudienceWorld(t,
		fakeslack.Conversation{ID: "CPLAN", Members: []string{"UANA", "UBOB"}},
		fakeslack.Conversation{ID: "CWITHGUS", Members: []string{"UANA", "UGUS"}})
	anaDM := w.at("Ana's DM", "DANA", "UANA")
	if why := w.slash(t, anaDM, "/why", "release train"); !strings.Contains(why, teamSecret) {
		t.Errorf("Ana's /why in her DM does not find the team's line: %q", why)
	}

	gusDM := w.at("Gus's DM (a guest)", "DGUS", "UGUS")
	answer, prompt := w.ask(t, gusDM, teamAsk)
	sees(t, gusDM, prompt, false)
	if strings.Contains(answer, teamSecret) {
		t.Errorf("Gus was told the team's secret: %q", answer)
	}
	w.say(t, gusDM, "FACT: Gus badge number is GUSBADGE77.")
	if got := w.say(t, gusDM, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Errorf("/dream in Gus's DM: %q", got)
	}
	if got := scopeFile(t, w.h, slackT1(audience.Guest, "", "UGUS").Home()); !strings.Contains(got, "GUSBADGE77") {
		t.Errorf("Gus's fact is not in his own memory:\n%s", got)
	}
	if answer, prompt := w.ask(t, gusDM, "What is Gus badge number?"); !strings.Contains(answer, "GUSBADGE77") || strings.Contains(prompt, teamSecret) {
		t.Errorf("Gus's DM does not remember his fact (or shows the team's): %q\n%s", answer, prompt)
	}
	if why := w.slash(t, gusDM, "/why", "release train"); strings.Contains(why, teamSecret) {
		t.Errorf("Gus's /why shows the team's memory: %q", why)
	}

	// Gus's link to the memory page reads what his DM reads.
	reply := w.say(t, gusDM, "/web-link")
	link := signInLinkRe.FindString(reply)
	if link == "" || !strings.Contains(reply, "your own memory") {
		t.Fatalf("/web-link in Gus's DM: %q", reply)
	}
	page := signedIn(t, w.web, link)
	if code, body := page("/memory/" + string(slackT1(audience.Guest, "", "UGUS").Home())); code != http.StatusOK || !strings.Contains(body, "GUSBADGE77") {
		t.Errorf("Gus's own memory on the page: %d", code)
	}
	if code, body := page("/memory/" + string(slackT1(audience.Team, "", "").Home())); code != http.StatusNotFound || strings.Contains(body, teamSecret) {
		t.Errorf("the team's memory on Gus's page: %d", code)
	}

	eveDM := w.at("Eve's DM (another organisation)", "DEVE", "UEVE")
	if why := w.slash(t, eveDM, "/why", "release train"); strings.Contains(why, teamSecret) {
		t.Errorf("Eve's /why shows the team's memory: %q", why)
	}
	_, prompt = w.ask(t, eveDM, teamAsk)
	sees(t, eveDM, prompt, false)

	gusInPublic := w.at("Gus in #plan", "CPLAN", "UGUS")
	_, prompt = w.ask(t, gusInPublic, teamAsk)
	sees(t, gusInPublic, prompt, false)
	anaWithGus := w.at("Ana in a public channel Gus is in", "CWITHGUS", "UANA")
	_, prompt = w.ask(t, anaWithGus, teamAsk)
	sees(t, anaWithGus, prompt, false)

	for _, p := range []place{gusDM, eveDM, gusInPublic, anaWithGus} {
		for _, text := range w.shown(p) {
			if strings.Contains(text, teamSecret) {
				t.Errorf("%s was shown the team's secret: %q", p.name, text)
			}
		}
	}
	// The team still remembers its own.
	if _, prompt := w.ask(t, w.at("Bob in #general", "CGENERAL", "UBOB"), teamAsk); !strings.Contains(prompt, teamSecret) {
		t.Error("#general no longer shows the team's memory")
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", w.gw.stderr.String())
	}
}

// Each change Slack announces changes the audience at once: a guest
// joining and leaving a channel, a channel shared with another
// organisation and unshared, a private channel made public, a public one
// made private (what is said after the change is the private channel's),
// and a channel whose members cannot be listed counts as one of its own.
func TestSlackAudienceChangesThroughTheBinary(t *testing.T) {
	w := startAudienceWorld(t,
		fakeslack.Conversation{ID: "CJOIN", Members: []string{"UANA", "UBOB"}},
		fakeslack.Conversation{ID: "CSHARE", Members: []string{"UANA"}},
		fakeslack.Conversation{ID: "GFALCON", Private: true, Members: []string{"UANA"}},
		fakeslack.Conversation{ID: "CMERGER", Members: []string{"UANA", "UBOB"}},
		fakeslack.Conversation{ID: "CHIDDEN", MembersError: "internal_error"})
	t.Run("a guest joins and leaves", w.guestJoinsAndLeaves)
	t.Run("shared with another organisation, then unshared", w.sharedAndUnshared)
	t.Run("a private channel made public", w.privateMadePublic)
	t.Run("a public channel made private", w.publicMadePrivate)
	t.Run("members cannot be listed", func(t *testing.T) {
		p := w.at("Ana in #hidden", "CHIDDEN", "UANA")
		_, prompt := w.ask(t, p, teamAsk)
		sees(t, p, prompt, false)
	})
	if t.Failed() {
		t.Logf("gateway log:\n%s", w.gw.stderr.String())
	}
}

func (w *audienceWorld) guestJoinsAndLeaves(t *testing.T) {
	p := w.at("Ana in #join", "CJOIN", "UANA")
	_, prompt := w.ask(t, p, teamAsk)
	sees(t, p, prompt, true)
	ds, err := w.sl.Join("CJOIN", "UGUS", "UBOB")
	w.announced(t, ds, err)
	_, prompt = w.ask(t, p, teamAsk)
	sees(t, p, prompt, false)
	ds, err = w.sl.Leave("CJOIN", "UGUS")
	w.announced(t, ds, err)
	_, prompt = w.ask(t, p, teamAsk)
	sees(t, p, prompt, true)
}

// sharedAndUnshared asks with a slash command, which (unlike a mention)
// carries no is_ext_shared_channel: only the announcement can tell.
func (w *audienceWorld) sharedAndUnshared(t *testing.T) {
	p := w.at("Ana in #share", "CSHARE", "UANA")
	if why := w.slash(t, p, "/why", "release train"); !strings.Contains(why, teamSecret) {
		t.Errorf("/why in a public channel: %q", why)
	}
	ds, err := w.sl.ShareChannel("CSHARE", "TPARTNER")
	w.announced(t, ds, err)
	if why := w.slash(t, p, "/why", "release train"); strings.Contains(why, teamSecret) {
		t.Errorf("/why in a channel just shared with another organisation: %q", why)
	}
	ds, err = w.sl.UnshareChannel("CSHARE", "TPARTNER")
	w.announced(t, ds, err)
	if why := w.slash(t, p, "/why", "release train"); !strings.Contains(why, teamSecret) {
		t.Errorf("/why once unshared: %q", why)
	}
}

func (w *audienceWorld) privateMadePublic(t *testing.T) {
	p := w.at("Ana in #falcon", "GFALCON", "UANA")
	w.say(t, p, "FACT: Project Falcon launch code name is VORTEXPLUM, only this channel knows.")
	if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Fatalf("/dream in #falcon: %q", got)
	}
	const ask = "What is the Project Falcon launch code name?"
	if _, prompt := w.ask(t, p, ask); !strings.Contains(prompt, "VORTEXPLUM") {
		t.Fatalf("the private channel does not remember its fact:\n%s", prompt)
	}
	ds, err := w.sl.ConvertToPublic("GFALCON", "UANA")
	w.announced(t, ds, err)
	answer, prompt := w.ask(t, p, ask)
	if strings.Contains(prompt, "VORTEXPLUM") || strings.Contains(answer, "VORTEXPLUM") {
		t.Errorf("made public, #falcon still shows its private memory: %q\n%s", answer, prompt)
	}
	sees(t, p, prompt, true)
	private := slackT1(audience.Private, "GFALCON", "").Home()
	if got := scopeFile(t, w.h, private); !strings.Contains(got, "VORTEXPLUM") {
		t.Errorf("the private fact left the private channel's memory:\n%s", got)
	}
}

func (w *audienceWorld) publicMadePrivate(t *testing.T) {
	p := w.at("Ana in #merger", "CMERGER", "UANA")
	_, prompt := w.ask(t, p, teamAsk)
	sees(t, p, prompt, true)
	ds, err := w.sl.ConvertToPrivate("CMERGER", "UANA")
	w.announced(t, ds, err)
	w.say(t, p, "FACT: The merger code name is BLUEHERON.")
	if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Fatalf("/dream in #merger: %q", got)
	}
	team := slackT1(audience.Team, "", "").Home()
	private := slackT1(audience.Private, "CMERGER", "").Home()
	if got := scopeFile(t, w.h, team); strings.Contains(got, "BLUEHERON") {
		t.Errorf("said after the channel was made private, the fact is in the team's memory:\n%s", got)
	}
	if got := scopeFile(t, w.h, private); !strings.Contains(got, "BLUEHERON") {
		t.Errorf("the fact is not in the private channel's memory:\n%s", got)
	}
	if _, prompt := w.ask(t, p, "What is the merger code name?"); !strings.Contains(prompt, "BLUEHERON") || !strings.Contains(prompt, teamSecret) {
		t.Errorf("the private channel does not show its own and the team's memory:\n%s", prompt)
	}
	if _, prompt := w.ask(t, w.at("Bob in #general", "CGENERAL", "UBOB"), "What is the merger code name?"); strings.Contains(prompt, "BLUEHERON") {
		t.Errorf("#general was shown the private channel's fact:\n%s", prompt)
	}
}

// mention sends a bare app_mention in p as its person, as Slack does when
// the app hears of a post only by its mention, and waits for the answer.
func (w *audienceWorld) mention(t *testing.T, p place, text string) string {
	t.Helper()
	before := len(w.shown(p))
	if _, err := w.sl.Inject(fakeslack.Event{Type: "app_mention", Channel: w.channel(p), User: w.users[p.key], Text: "<@" + w.sl.BotUserID() + "> " + text}); err != nil {
		t.Fatal(err)
	}
	return waitShown(t, w, p, before, text, w.gw)
}

// Facts archived into a wider scope before a change was seen are not left
// there: #late is made private, and a mention reaches the gateway before
// Slack's announcement does, so what Ana says is archived and dreamed as
// the team's. The operator's `dreamgate memory move` puts the
// conversation's entries and the lines traced to them in the private
// channel's scope, as one commit: the team's memory, its prompts and the
// recall tool no longer hold them, the private channel's memory does, and
// the team's earlier commits still do (docs/privacy.md says so).
func TestSlackMisfiledFactsMovedThroughTheBinary(t *testing.T) {
	w := startAudienceWorld(t, fakeslack.Conversation{ID: "CLATE", Members: []string{"UANA", "UBOB"}})
	late := w.at("Ana in #late", "CLATE", "UANA")
	if _, prompt := w.ask(t, late, teamAsk); !strings.Contains(prompt, teamSecret) {
		t.Fatalf("#late is not the team's at first:\n%s", prompt)
	}
	w.sl.SetConversation(fakeslack.Conversation{ID: "CLATE", Private: true}) // the announcement is still on its way
	w.mention(t, late, "FACT: The merger code name is BLUEHERON.")
	if got := w.mention(t, late, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Fatalf("/dream in #late: %q", got)
	}
	team := slackT1(audience.Team, "", "").Home()
	private := slackT1(audience.Private, "CLATE", "").Home()
	if got := scopeFile(t, w.h, team); !strings.Contains(got, "BLUEHERON") {
		t.Fatalf("the misfiled fact is not in the team's memory, so this test shows nothing:\n%s", got)
	}

	dry := w.h.run("memory", "move", "--conversation", "slack:CLATE", "--to", string(private), "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "Would move") || !strings.Contains(dry.stdout, "BLUEHERON") {
		t.Fatalf("dry run: exit %d\n%s%s", dry.code, dry.stdout, dry.stderr)
	}
	if got := scopeFile(t, w.h, team); !strings.Contains(got, "BLUEHERON") {
		t.Error("a dry run moved the fact")
	}
	r := w.h.run("memory", "move", "--conversation", "slack:CLATE", "--to", string(private))
	if r.code != 0 || !strings.Contains(r.stdout, "Moved") || !strings.Contains(r.stdout, "earlier commits still hold") {
		t.Fatalf("memory move: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := scopeFile(t, w.h, team); strings.Contains(got, "BLUEHERON") {
		t.Errorf("after the move the team's memory still holds the fact:\n%s", got)
	}
	if got := scopeFile(t, w.h, private); !strings.Contains(got, "BLUEHERON") {
		t.Errorf("after the move the private channel's memory lacks the fact:\n%s", got)
	}
	if why := w.h.run("why", "--scope", string(private), "merger code name"); why.code != 0 || !strings.Contains(why.stdout, "BLUEHERON") {
		t.Errorf("dreamgate why in the private scope: exit %d\n%s", why.code, why.stdout)
	}
	bob := w.at("Bob in #general", "CGENERAL", "UBOB")
	answer, prompt := w.ask(t, bob, "What is the merger code name?")
	if strings.Contains(prompt, "BLUEHERON") || strings.Contains(answer, "BLUEHERON") {
		t.Errorf("the team's prompt or recall still finds the moved fact: %q\n%s", answer, prompt)
	}
	// Each scope's memory has a line of history of its own.
	// (On PostgreSQL, git reads the database's repository exported.)
	teamRef := "refs/" + team.Dir()
	repoDir, _, err := memoryRepoDir(w.h.ws)
	if err != nil {
		t.Fatal(err)
	}
	if subject, err := git(t, repoDir, "log", "-1", "--format=%s", teamRef); err != nil || !strings.HasPrefix(subject, "move:") {
		t.Errorf("the team's last commit is %q (%v), want the move's", subject, err)
	}
	if old, err := git(t, repoDir, "show", teamRef+"~1:"+team.Dir()+"/"+workspace.Memory); err != nil || !strings.Contains(old, "BLUEHERON") {
		t.Errorf("the team's earlier commit does not hold the fact (%v), yet the docs say it does:\n%s", err, old)
	}
	again := w.h.run("memory", "move", "--conversation", "slack:CLATE", "--to", string(private))
	if again.code != 0 || !strings.Contains(again.stdout, "Nothing of slack:CLATE to move") {
		t.Errorf("asked again: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	if bad := w.h.run("memory", "move", "--conversation", "slack:CLATE", "--to", "../etc"); bad.code != 2 || !strings.Contains(bad.stderr, "not a memory scope") {
		t.Errorf("a bad scope: exit %d\n%s", bad.code, bad.stderr)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", w.gw.stderr.String())
	}
}
