package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/history"
	tokencount "github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// Issue 28's points about Dream's steps, through the built binary.

// appendHistory writes entries into the workspace's archive as another
// process's consolidator would (scope, content, session key each).
func appendHistory(t *testing.T, ws string, entries ...[3]string) {
	t.Helper()
	st, err := history.Open(filepath.Join(ws, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := st.AppendIn(audience.Scope(e[0]), e[1], e[2]); err != nil {
			t.Fatal(err)
		}
	}
}

// scopeMemory is the memory files of a scope's folder ("" the root), joined.
func scopeMemory(ws, scope string) string {
	dir := ws
	if scope != "" {
		dir = filepath.Join(ws, "scopes", scope)
	}
	var b strings.Builder
	for _, f := range []string{"SOUL.md", "USER.md", "memory/MEMORY.md"} {
		data, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		b.Write(data)
	}
	return b.String()
}

// Point 1: a new audience's first archive that lands between unread
// entries of another scope reaches its memory, though a Dream of the
// other scope alone came first.
func TestNewScopeBetweenAnothersEntriesThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	appendHistory(t, h.ws, [3]string{"", "- I am a tea drinker", "cli:direct"})
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("first run: %d %s", r.code, r.stderr)
	}
	const person = "person-slack-t1-uana"
	appendHistory(t, h.ws,
		[3]string{"", "- The project is called dreamgate", "cli:direct"},
		[3]string{person, "- Ana keeps bees in the garden", "slack:DANA"},
		[3]string{"", "- My dog is called Pixel", "cli:direct"})
	if r := h.run("dream", "run", "--scope", "default"); r.code != 0 {
		t.Fatalf("run of the default scope: %d %s", r.code, r.stderr)
	}
	for range 2 {
		if r := h.run("dream", "run"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	if got := scopeMemory(h.ws, person); !strings.Contains(got, "Ana keeps bees") {
		t.Errorf("the new scope's fact is in no memory file:\n%s", got)
	}
}

// Point 7: a fact at the end of a 5,096-character history entry reaches
// memory: Dream reads entries whole.
func TestLongEntryIsReadWholeThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	const fact = "\n- I am a tea drinker"
	long := strings.Repeat("Some talk about the weather in the valley. ", 200)[:5_096-len(fact)] + fact
	appendHistory(t, h.ws, [3]string{"", long, "cli:direct"})
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: %d %s", r.code, r.stderr)
	}
	if got := scopeMemory(h.ws, ""); !strings.Contains(got, "tea drinker") {
		t.Errorf("the fact at the end of a %d-character entry is not in memory:\n%s", len(long), got)
	}
}

// slackDM is a gateway with Ana's and Bob's DMs through the Slack fake.
func slackDM(t *testing.T, h *harness) (*fakeslack.Server, *gatewayProc) {
	t.Helper()
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.set("dream.cron", "0 0 1 1 *")
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	return sl, gw
}

// say posts text in the DM channel as user and waits for the bot's
// answer (Dream's report for /dream).
func sayDM(t *testing.T, sl *fakeslack.Server, gw *gatewayProc, channel, user, text string) string {
	t.Helper()
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{"slack:" + channel: user}, teams: map[string]string{"slack:" + channel: "T1"}}
	return w.say(t, place{name: channel, key: "slack:" + channel}, text)
}

// Point 6: after /dream in Ana's DM, its next prompt does not list what
// was just folded into her memory under "not yet folded into long-term
// memory", though Bob's DM has entries no Dream read yet.
func TestRecentHistoryFollowsTheScopesCursor(t *testing.T) {
	h := newHarness(t)
	bob := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}.Home()
	ana := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}.Home()
	appendHistory(t, h.ws,
		[3]string{string(bob), "- Bob keeps a red kayak by the lake", "slack:DBOB"},
		[3]string{string(ana), "- Ana keeps bees in the garden", "slack:DANA"})
	sl, gw := slackDM(t, h)
	if got := sayDM(t, sl, gw, "DANA", "UANA", "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Fatalf("/dream answered %q", got)
	}
	n := len(h.llm.Requests())
	sayDM(t, sl, gw, "DANA", "UANA", "Good morning to you.")
	var sys string
	for _, r := range h.llm.Requests()[n:] {
		if chatKey(r) == "slack:DANA" {
			sys = r.Messages[0].Content
			break
		}
	}
	if !strings.Contains(sys, "Ana keeps bees") {
		t.Fatalf("the dreamed fact is not in Ana's prompt at all:\n%s", sys)
	}
	if _, recent, ok := strings.Cut(sys, "# Recent history"); ok && strings.Contains(recent, "Ana keeps bees") {
		t.Errorf("Ana's prompt lists the fact Dream folded into her memory as not yet folded:\n%s", recent)
	}
}

// Point 9: a new scope's first files are committed as "scope created: …",
// and nobody is told hand edits were saved when nobody edited anything.
func TestNewScopeIsCommittedAsCreatedThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	sl, gw := slackDM(t, h)
	sayDM(t, sl, gw, "DANA", "UANA", "I keep bees in the garden behind the house.")
	got := sayDM(t, sl, gw, "DANA", "UANA", "/dream")
	if !strings.HasPrefix(got, "Dream") || strings.Contains(got, "Hand edits") {
		t.Errorf("/dream answered %q", got)
	}
	repo, err := h.app().openRepo()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := repo.Log(10, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	created := false
	for _, c := range cs {
		if strings.HasPrefix(c.Subject, "manual:") {
			t.Errorf("a commit of hand edits nobody made: %q", c.Subject)
		}
		created = created || strings.HasPrefix(c.Subject, "scope created: person-slack-t1-uana")
	}
	if !created {
		var subjects []string
		for _, c := range cs {
			subjects = append(subjects, c.Subject)
		}
		t.Errorf("no 'scope created' commit: %q", subjects)
	}
}

// Point 11: a deep Dream's prompt fits the Dream model's window — a scope
// whose facts do not fit one call is shown in several, each within the
// window (before, one call of all of them: 234K tokens at 10,000 facts
// against a 128K window).
func TestDeepDreamFitsTheWindowThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.set("llm.contextWindow", 8000)
	h.set("llm.maxTokens", 500)
	h.llm.SetResponder(llmtest.MemoryModel)
	var b strings.Builder
	b.WriteString("# User\n\n")
	for i := range 600 {
		fmt.Fprintf(&b, "- Ana's project P%03d is called Heron%03d and ships in spring. <!-- durable 2026-%02d-01 src:%d -->\n", i, i, 1+i%11, i+1)
	}
	if err := os.MkdirAll(h.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "USER.md"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "Deep Dream:") {
		t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var count tokencount.Counter
	calls := 0
	for _, r := range h.llm.Requests() {
		last := r.Messages[len(r.Messages)-1].Content
		if !strings.HasPrefix(last, "## Deep Dream") {
			continue
		}
		calls++
		if n := count.Count(r.Messages[0].Content) + count.Count(last); n > 8000-500 {
			t.Errorf("a deep Dream call holds %d tokens, over the window's %d", n, 8000-500)
		}
	}
	if calls < 2 {
		t.Errorf("%d deep Dream calls, want the facts in several", calls)
	}
}
