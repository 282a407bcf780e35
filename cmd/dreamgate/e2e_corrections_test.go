package main

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// correction is a value Ana states, and the value that later corrects it.
type correction struct {
	first, later, old, new string
}

var corrections = []correction{
	{"My office is Harbour.", "My office is Canal Road now, not Harbour.", "Harbour", "Canal Road"},
	{"My manager is Rosa.", "My manager is Ines now, not Rosa.", "Rosa", "Ines"},
	{"My laptop is a ThinkPad.", "My laptop is a Framework now, not ThinkPad.", "ThinkPad", "Framework"},
	{"My team is Falcon.", "My team is Kestrel now, not Falcon.", "Falcon", "Kestrel"},
}

// Issue 28's months scenario (Done when, third bullet; point 10's story):
// months of Ana's DMs through the built binary, the Slack adapter and its
// fake, with the test clock moving a day at every read. Her first
// values are told, then months of other facts push them out of hot memory
// to cold memory (deep Dreams, the budget); only then does she correct
// them. Afterwards every superseded value is marked where it stands, with
// a pointer to its replacement, and no answer's prompt shows one as
// current: no system prompt holds it, and a search that finds it in cold
// memory says it is superseded and what is true now; /why says so too.
func TestMonthsOfCorrectionsAfterTheOldValuesWentCold(t *testing.T) {
	if testing.Short() {
		t.Skip("plays months of a DM through the gateway")
	}
	h, gw, w, ana := correctionsWorld(t)
	// dream archives the conversation (/new, in the background) and, once
	// the archive holds marker, dreams.
	dream := func(what, marker string) {
		t.Helper()
		w.say(t, ana, "/new")
		waitArchived(t, h, marker, gw)
		got := w.say(t, ana, "/dream")
		if !strings.HasPrefix(got, "Dream") {
			t.Fatalf("%s: /dream answered %q", what, got)
		}
		t.Logf("%s: %s", what, got)
	}

	// Month one: the first values.
	var first []string
	for _, c := range corrections {
		first = append(first, c.first)
	}
	w.say(t, ana, strings.Join(first, " "))
	dream("the first values", corrections[len(corrections)-1].first)
	// Months of other facts: the first values are the oldest lines, and
	// deep Dreams move them out to keep the scope within its budget.
	n := 0
	for range 6 {
		for range 3 {
			var s []string
			for range 6 {
				n++
				s = append(s, fmt.Sprintf("The code word for project P%04d is MAPLE%04dX.", n, n))
			}
			w.say(t, ana, strings.Join(s, " "))
		}
		dream("months of facts", fmt.Sprintf("MAPLE%04dX", n))
	}
	scope := ana.aud.Home()
	for _, c := range corrections {
		if l, rel := findLine(t, h, scope, c.old); rel != memory.Cold {
			t.Fatalf("before the correction, %q is in %s, not cold memory: %+v", c.old, rel, l)
		}
	}

	// Months later, the corrections.
	for _, c := range corrections {
		w.say(t, ana, c.later)
	}
	dream("the corrections", corrections[len(corrections)-1].later)
	checkSuperseded(t, h, scope)

	// Every answer since: no system prompt holds an old value, and a
	// search result that does says it is superseded.
	before := len(h.llm.Requests())
	for _, q := range []string{"Where is my office?", "Who is my manager?", "Was my office ever Harbour?", "Was my team ever Falcon?"} {
		w.say(t, ana, q)
	}
	checkNotCurrent(t, h.llm.Requests()[before:], ana.key)
	why := w.say(t, ana, "/why Harbour")
	if !strings.Contains(why, "superseded, no longer current; now: “My office is Canal Road now.”") {
		t.Errorf("/why Harbour:\n%s", why)
	}
	checkPageShowsSuperseded(t, h, gw, scope)
}

// correctionsWorld is Ana's DM through the Slack fake and the gateway on
// the test clock (a day at every read), with the rule-following model and
// a small memory budget, so that months of facts push her first values to
// cold memory.
func correctionsWorld(t *testing.T) (*harness, *gatewayProc, *slackWorld, place) {
	t.Helper()
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"UANA": "Ana"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.set("memory.hotTokens", 1000)
	h.set("dream.maxBatchesPerRun", 50)
	h.set("dream.cron", "0 0 1 1 *") // Dreams when asked, not on the real clock
	h.set("agent.idleCompactAfterMinutes", 0)
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startProc(t, testClockEnv+"=2026-01-05T09:00:00Z,24h")
	if !waitUp(t, gw, "slack") {
		t.Fatalf("gateway exited; log:\n%s", gw.stderr.String())
	}
	ana := place{name: "Ana's DM", aud: audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}, key: "slack:DANA"}
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{ana.key: "UANA"}, teams: map[string]string{ana.key: "T1"}}
	return h, gw, w, ana
}

// checkSuperseded: each old value of scope is marked superseded in cold
// memory, still saying why it left hot memory, and points at the current
// line holding its new value.
func checkSuperseded(t *testing.T, h *harness, scope audience.Scope) {
	t.Helper()
	facts, err := memory.New(memory.NewDisk(h.ws), false).Facts(scope)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range corrections {
		old, rel := findLine(t, h, scope, c.old)
		now, ok := facts.Now(old)
		switch {
		case rel != memory.Cold || !old.Superseded():
			t.Errorf("%q is not marked superseded (%s): %+v", c.old, rel, old)
		case !ok || !strings.Contains(now.Line.Text, c.new) || now.File == memory.Cold || now.Line.Superseded():
			t.Errorf("%q points at %+v (%v), not the current line holding %q", c.old, now, ok, c.new)
		case old.Why != memline.Budget && old.Why != memline.Moved:
			t.Errorf("%q lost why it left hot memory: %+v", c.old, old)
		}
		t.Logf("%q (confirmed %s): in cold memory (why:%s out:%s), superseded by %q (%s, %s)", c.old, old.Date, old.Why, old.Out, now.Line.Text, now.File, now.Line.Date)
	}
}

// checkPageShowsSuperseded: the memory page of scope shows each old value
// struck out, with what is now — served by the gateway again, on the real
// clock (a sign-in lasts hours, and the test clock moves a day at every
// read).
func checkPageShowsSuperseded(t *testing.T, h *harness, gw *gatewayProc, scope audience.Scope) {
	t.Helper()
	if !gw.stop(30 * time.Second) {
		t.Fatalf("the gateway did not stop; log:\n%s", gw.stderr.String())
	}
	webAddr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", webAddr)
	h.set("web.token", testWebToken)
	waitWeb(t, h.startProc(t), "http://"+webAddr)
	page := operatorPage(t, "http://"+webAddr, "/memory/"+string(scope))
	for _, c := range corrections {
		want := "superseded, no longer current; now: “" + strings.SplitN(c.later, ",", 2)[0]
		if !strings.Contains(page, want) {
			i := max(0, strings.Index(page, c.old)-300)
			t.Errorf("the memory page does not show %q superseded (%q):\n%.1500s", c.old, want, page[i:])
		}
	}
}

// operatorPage signs in to the memory page at base with the operator's
// token and returns the page at path.
func operatorPage(t *testing.T, base, path string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(base+"/signin", url.Values{"token": {testWebToken}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = c.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d\n%s", path, res.StatusCode, b)
	}
	return html.UnescapeString(string(b))
}

// waitArchived waits until the archive holds marker: /new archives in the
// background, and a Dream reads what is archived.
func waitArchived(t *testing.T, h *harness, marker string, gw *gatewayProc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a loaded machine's margin; nothing is timed
	for {
		data, _ := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(workspace.History)))
		if strings.Contains(string(data), marker) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q is not archived after a minute; log:\n%s", marker, gw.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findLine is the fact of scope holding word, and its file (hot files
// first).
func findLine(t *testing.T, h *harness, scope audience.Scope, word string) (memline.Line, string) {
	t.Helper()
	for _, rel := range memory.TierFiles() {
		data, _ := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(scope.Dir()), filepath.FromSlash(rel)))
		for _, it := range memline.ParseFile(data).Items {
			if it.Fact && strings.Contains(it.Line.Text, word) {
				return it.Line, rel
			}
		}
	}
	t.Fatalf("no line of %s holds %q", scope, word)
	return memline.Line{}, ""
}

// inMemoryPart reports whether line is in the memory part of the system
// prompt sys (before its Recent history, which quotes what people said).
func inMemoryPart(sys, line string) bool {
	if i := strings.Index(sys, "\n# Recent history"); i >= 0 {
		sys = sys[:i]
	}
	return strings.Contains(sys, line)
}

// checkNotCurrent: the chat requests of key hold no corrected value as
// current — none in a system prompt, and a cold-memory match of a search
// with one says it is superseded.
func checkNotCurrent(t *testing.T, reqs []llmtest.Request, key string) {
	t.Helper()
	searched := 0
	for _, r := range reqs {
		if chatKey(r) != key {
			continue
		}
		for _, m := range r.Messages {
			for _, line := range strings.Split(m.Content, "\n") {
				for _, c := range corrections {
					if !strings.Contains(line, c.old) {
						continue
					}
					switch {
					case m.Role == llm.RoleSystem && inMemoryPart(m.Content, line):
						t.Errorf("a system prompt shows %q: %q", c.old, line)
					case m.Role == llm.RoleTool && strings.Contains(line, "cold memory line"):
						searched++
						if !strings.Contains(line, "superseded, no longer current; now: “"+strings.SplitN(c.later, ",", 2)[0]) {
							t.Errorf("a search shows %q as current: %q", c.old, line)
						}
					}
				}
			}
		}
	}
	if searched == 0 {
		t.Error("no search found an old value in cold memory: the check saw nothing")
	}
	t.Logf("%d search results of old values, each marked superseded", searched)
}
