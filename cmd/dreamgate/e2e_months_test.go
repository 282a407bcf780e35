package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Months of a team's use, through the built binary, the Slack adapter and
// its fake, and the rule-following fake model: 1,500 facts told over 30
// conversations in three audiences (the team's public channels, Ana's DMs,
// Bob's DMs), each conversation archived (/new) and dreamed (/dream);
// deep Dreams move what passes 80% of a scope's budget to its cold memory.
// Afterwards each audience's system prompt keeps each memory scope within
// its budget, shows whole lines only and says how many it left out (no
// file is cut silently), and every fact is either whole in the prompt of
// its own audience or found by the recall tool there — and no prompt, tool
// result or post of an audience that may not read a fact's scope holds it.

const (
	monthsConversations = 30
	monthsMessages      = 5  // per conversation
	monthsFactsPerMsg   = 10 // sentences per message
	monthsHotTokens     = 2000
)

// monthsFact is fact n: a sentence with a word found nowhere else, its
// secret.
func monthsFact(n int) (sentence, secret, question string) {
	secret = fmt.Sprintf("MAPLE%04dX", n)
	return fmt.Sprintf("The code word for project P%04d is %s.", n, secret), secret,
		fmt.Sprintf("What is the code word for project P%04d?", n)
}

func TestMonthsOfFactsStayWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 30 conversations and 30 Dreams")
	}
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.set("memory.hotTokens", monthsHotTokens)
	h.set("dream.maxBatchesPerRun", 50)
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}

	team := audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	ana := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	bob := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}
	places := []place{
		{name: "the public channels", aud: team, key: "slack:CGENERAL"},
		{name: "Ana's DM", aud: ana, key: "slack:DANA"},
		{name: "Bob's DM", aud: bob, key: "slack:DBOB"},
	}
	w.users["slack:CGENERAL"], w.users["slack:DANA"], w.users["slack:DBOB"] = "UANA", "UANA", "UBOB"
	for _, p := range places {
		w.teams[p.key] = "T1"
	}
	// Fact n is told in place factPlace[n].
	factPlace := map[int]place{}
	n := 0
	for c := range monthsConversations {
		p := places[c%len(places)]
		for range monthsMessages {
			var sentences []string
			for range monthsFactsPerMsg {
				n++
				s, _, _ := monthsFact(n)
				sentences = append(sentences, s)
				factPlace[n] = p
			}
			w.say(t, p, strings.Join(sentences, " "))
		}
		w.say(t, p, "/new")
		if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
			t.Fatalf("conversation %d in %s: /dream answered %q", c, p.name, got)
		}
	}
	total := n
	// /new archives in the background: once every fact is in the archive,
	// each place's Dream reads what the last one may have missed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(workspace.History)))
		seen := map[string]bool{}
		for _, m := range regexp.MustCompile(`MAPLE\d{4}X`).FindAllString(string(data), -1) {
			seen[m] = true
		}
		if len(seen) == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d facts archived after a minute", len(seen), total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range places {
		if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
			t.Fatalf("the last /dream in %s answered %q", p.name, got)
		}
	}

	// Every fact landed once in its own scope: in its memory files, or in
	// its cold memory where a deep Dream moved it to keep the scope within
	// its budget.
	inFiles, inCold := map[audience.Scope]int{}, map[audience.Scope]int{}
	for _, p := range places {
		for _, rel := range append(workspace.MemoryFiles(), workspace.Cold) {
			data, _ := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(p.aud.Home().Dir()), filepath.FromSlash(rel)))
			for _, it := range memline.ParseFile(data).Items {
				if it.Fact && strings.Contains(it.Line.Text, "code word for project") {
					if rel == workspace.Cold {
						inCold[p.aud.Home()]++
					} else {
						inFiles[p.aud.Home()]++
					}
				}
			}
		}
	}
	for _, p := range places {
		s := p.aud.Home()
		if want := total / len(places); inFiles[s]+inCold[s] != want {
			t.Errorf("%s's scope holds %d facts in its files and %d in cold memory, want %d in all", p.name, inFiles[s], inCold[s], want)
		}
		if inCold[s] == 0 {
			t.Errorf("%s's scope: no deep Dream moved a fact to cold memory (%d in its files)", p.name, inFiles[s])
		}
		t.Logf("%s's scope: %d facts in its files, %d in cold memory", p.name, inFiles[s], inCold[s])
	}

	// Each audience's prompt: within budget per scope, whole lines, what
	// is left out said.
	counter := consolidator.NewCounter()
	shownIn := map[string]map[int]bool{} // place key -> facts whole in its prompt
	for _, p := range places {
		w.say(t, p, "/new")
		before := len(h.llm.Requests())
		w.say(t, p, "Good morning, the weather is nice today.")
		sys := ""
		for _, r := range h.llm.Requests()[before:] {
			if chatKey(r) == p.key {
				sys = r.Messages[0].Content
			}
		}
		if sys == "" {
			t.Fatalf("%s: no chat request", p.name)
		}
		shownIn[p.key] = checkMonthsPrompt(t, p, sys, counter, inFiles)
	}
	monthsNoLeak(t, h, w, places, factPlace, total)

	// What is not in its audience's prompt is found by the recall tool
	// there: every chat turn is offered it, and its prompt says so.
	for _, r := range h.llm.Requests() {
		if chatKey(r) == "" {
			continue
		}
		if !slicesHas(r.Tools, "recall") {
			t.Fatalf("a chat request of %s has no recall tool: %v", chatKey(r), r.Tools)
		}
		if !strings.Contains(r.Messages[0].Content, "the recall tool searches") {
			t.Fatalf("the system prompt of %s does not name the recall tool:\n%.1500s", chatKey(r), r.Messages[0].Content)
		}
	}
	searched := 0
	for f := 1; f <= total; f++ {
		p := factPlace[f]
		if shownIn[p.key][f] {
			continue
		}
		searched++
		_, secret, q := monthsFact(f)
		// The fake answers "I found: …" from the tool's result alone.
		if got := w.say(t, p, q); !strings.HasPrefix(got, "I found: ") || !strings.Contains(got, secret) {
			t.Errorf("fact %d (%s) is neither in the prompt of %s nor found by recall there: answered %q", f, secret, p.name, got)
		}
	}
	t.Logf("%d facts not in their audience's prompt, each searched for with the recall tool there", searched)
	// Each audience asks for a sample of the others' facts.
	for _, p := range places {
		for f := 1; f <= total; f += 37 {
			if q := factPlace[f]; !p.aud.MayRead(q.aud.Home()) {
				_, _, question := monthsFact(f)
				w.say(t, p, question)
			}
		}
	}
	monthsNoLeak(t, h, w, places, factPlace, total)
}

func slicesHas(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

var monthsOmitted = regexp.MustCompile(`\((\d+) of the (\d+) lines of this memory, the least important and oldest, are not shown here`)

// monthsFactLine is a fact line as the prompt shows it: whole, followed by
// the date Dream stamped it with (" (Nov 2026)"), its comment left out.
var monthsFactLine = regexp.MustCompile(`^- The code word for project P(\d{4}) is MAPLE(\d{4})X\.(?: \([A-Z][a-z]{2} \d{4}\))?$`)

// checkMonthsPrompt checks the memory parts of p's system prompt sys and
// returns the facts it shows whole.
func checkMonthsPrompt(t *testing.T, p place, sys string, counter *consolidator.Counter, inFiles map[audience.Scope]int) map[int]bool {
	t.Helper()
	shown := map[int]bool{}
	end := len(sys)
	for _, mark := range []string{"\n# Recent history", "\n# Last archive summary"} {
		if i := strings.Index(sys, mark); i >= 0 && i < end {
			end = i
		}
	}
	parts := strings.Split(sys[:end], "\n# Memory ")[1:]
	if want := len(p.aud.Readable()); len(parts) != want {
		t.Fatalf("%s: %d memory parts in the prompt, want %d:\n%.2000s", p.name, len(parts), want, sys)
	}
	for i, part := range parts {
		scope := p.aud.Readable()[i]
		var lines []string
		facts := 0
		said := false
		for _, line := range strings.Split(part, "\n")[1:] {
			switch {
			case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
			case monthsOmitted.MatchString(line):
				m := monthsOmitted.FindStringSubmatch(line)
				left, all := atoi(m[1]), atoi(m[2])
				said = true
				if all-left != len(lines) || left == 0 {
					t.Errorf("%s, scope %s: the sentence says %d of %d left out, the part shows %d lines", p.name, scope, left, all, len(lines))
				}
			default:
				lines = append(lines, line)
				if strings.Contains(line, "code word for project") {
					m := monthsFactLine.FindStringSubmatch(line)
					if m == nil || m[1] != m[2] {
						t.Errorf("%s, scope %s: a fact line is not whole: %q", p.name, scope, line)
						continue
					}
					facts++
					shown[atoi(m[1])] = true
				}
			}
		}
		if got := counter.Count(strings.Join(lines, "\n")); got > monthsHotTokens {
			t.Errorf("%s, scope %s: its memory costs %d tokens in the prompt, over the budget of %d", p.name, scope, got, monthsHotTokens)
		}
		if !said && facts < inFiles[scope] {
			t.Errorf("%s, scope %s: %d of %d facts shown and nothing says so", p.name, scope, facts, inFiles[scope])
		}
		t.Logf("%s, scope %s: %d of %d facts shown, %d tokens", p.name, scope, facts, inFiles[scope], counter.Count(strings.Join(lines, "\n")))
	}
	return shown
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// monthsNoLeak checks that no chat request (system prompt, messages, tool
// results) and no post of a place holds the secret of a fact told where
// its audience may not read.
func monthsNoLeak(t *testing.T, h *harness, w *slackWorld, places []place, factPlace map[int]place, total int) {
	t.Helper()
	byKey := map[string]place{}
	for _, p := range places {
		byKey[p.key] = p
	}
	secretRe := regexp.MustCompile(`MAPLE(\d{4})X`)
	check := func(p place, text, what string) {
		for _, m := range secretRe.FindAllStringSubmatch(text, -1) {
			f := atoi(m[1])
			if f < 1 || f > total {
				continue
			}
			if !p.aud.MayRead(factPlace[f].aud.Home()) {
				t.Errorf("%s of %s holds fact %d of %s", what, p.name, f, factPlace[f].name)
				return
			}
		}
	}
	for _, r := range h.llm.Requests() {
		p, ok := byKey[chatKey(r)]
		if !ok {
			continue
		}
		for _, m := range r.Messages {
			if m.Role == llm.RoleUser && m.Content == "" {
				continue
			}
			check(p, m.Content, "a "+m.Role+" message of a chat request")
		}
	}
	for _, p := range places {
		for _, text := range w.shown(p) {
			check(p, text, "a post")
		}
	}
}
