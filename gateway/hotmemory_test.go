package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// hotFacts writes n facts into the USER.md of scope s under ws: fact i has
// priority prios[i%len(prios)] and was confirmed i days after a start, so
// a higher i is newer. It returns the lines as written.
func hotFacts(t testing.TB, ws string, s audience.Scope, n int, prios ...memline.Priority) []memline.Line {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("# Users\n\n")
	lines := make([]memline.Line, n)
	for i := range lines {
		l := memline.Line{Text: fmt.Sprintf("Fact %d: the code word for project %d is river-%d.", i, i, i*7)}
		if len(prios) > 0 {
			l.Priority = prios[i%len(prios)]
			l.Confirm(start.AddDate(0, 0, i), i+1)
		}
		lines[i] = l
		b.WriteString(l.String() + "\n")
	}
	p := filepath.Join(ws, filepath.FromSlash(s.Dir()), workspace.User)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return lines
}

// shownFacts returns the facts of the part of prompt that follows heading
// (up to the next "# " heading), by number.
func shownFacts(prompt string) map[int]string {
	out := map[int]string{}
	re := regexp.MustCompile(`(?m)^- Fact (\d+): .*$`)
	for _, m := range re.FindAllStringSubmatch(prompt, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		out[n] = m[0]
	}
	return out
}

var omittedRe = regexp.MustCompile(`\((\d+) of the (\d+) lines of this memory, the least important and oldest, are not shown here`)

// memoryText is the memory files' text of a default-scope prompt: what
// follows the Users heading up to the omitted-lines sentence.
func memoryText(t *testing.T, prompt string) string {
	t.Helper()
	i := strings.Index(prompt, "# Users (USER.md)\n\n")
	if i < 0 {
		t.Fatalf("no USER.md in the prompt:\n%s", prompt)
	}
	text := prompt[i+len("# Users (USER.md)\n\n"):]
	if j := strings.Index(text, "\n\n("); j >= 0 {
		text = text[:j]
	}
	return text
}

// Over budget, the prompt shows whole lines — the most important, newest
// first — within the budget as the tokenizer counts them, says in one
// sentence how many it left out and where to look, and reports the scope
// once for a deep Dream.
func TestHotMemoryOverBudgetShowsTheMostImportantNewestLines(t *testing.T) {
	ws := t.TempDir()
	lines := hotFacts(t, ws, audience.Default, 400, memline.Durable, memline.Ephemeral, memline.Permanent, memline.Durable)
	counter := consolidator.NewCounter()
	const budget = 2000
	p := NewPromptBuilder(ws, nil, nil).WithHotMemory(HotMemory{Tokens: budget, Counter: counter, Recall: true})
	view := MemoryView{Audience: operator, Scopes: []audience.Scope{audience.Default}}
	prompt := p.Fixed(view)

	if strings.Contains(prompt, "<!--") {
		t.Error("the prompt shows the lines' metadata comments")
	}
	if got := counter.Count(memoryText(t, prompt)); got > budget {
		t.Errorf("the memory shown costs %d tokens, over the budget of %d", got, budget)
	}
	m := omittedRe.FindStringSubmatch(prompt)
	if m == nil {
		t.Fatalf("no sentence says what was left out:\n%s", prompt)
	}
	if !strings.Contains(prompt, "search past conversations and cold memory with the recall tool") {
		t.Error("the sentence does not name the recall tool")
	}
	shown := shownFacts(prompt)
	if m[1] != fmt.Sprint(400-len(shown)) || m[2] != "400" {
		t.Errorf("the sentence says %s of %s left out; %d of 400 are shown", m[1], m[2], len(shown))
	}
	if len(shown) == 0 || len(shown) == 400 {
		t.Fatalf("%d facts shown", len(shown))
	}
	// Whole lines, as rendered: the fact and its date, nothing cut.
	for i, s := range shown {
		want, _ := memory.ShownLine(memline.Item{Fact: true, Line: lines[i], Raw: lines[i].String()})
		if s != want {
			t.Errorf("fact %d shown as %q, want %q", i, s, want)
		}
	}
	// No line left out outranks one shown: by priority, then newer first.
	worst := -1
	for i := range shown {
		if worst < 0 || lessImportant(lines[i], lines[worst]) {
			worst = i
		}
	}
	for i := range lines {
		if _, ok := shown[i]; !ok && lessImportant(lines[worst], lines[i]) {
			t.Errorf("fact %d (%s %s) is left out while fact %d (%s %s) is shown", i, lines[i].Priority, lines[i].Date,
				worst, lines[worst].Priority, lines[worst].Date)
			break
		}
	}
	for i := range lines {
		if lines[i].Priority == memline.Permanent {
			if _, ok := shown[i]; !ok {
				t.Errorf("permanent fact %d is left out while durable and ephemeral ones fit", i)
				break
			}
		}
	}

	if again := p.Fixed(view); again != prompt {
		t.Error("the prompt changed without a change of the files")
	}
	if got := p.TakeOverBudget(); len(got) != 1 || got[0] != audience.Default {
		t.Errorf("over budget: %v, want the default scope", got)
	}
	p.Fixed(view)
	if got := p.TakeOverBudget(); len(got) != 0 {
		t.Errorf("asked again for a deep Dream without a change of the files: %v", got)
	}
}

func lessImportant(a, b memline.Line) bool {
	if a.Effective().Rank() != b.Effective().Rank() {
		return a.Effective().Rank() > b.Effective().Rank()
	}
	return a.Date < b.Date
}

// Within budget every line is shown, however long the file: no cut at a
// number of characters (a file of more than 32,000 characters used to lose its end).
func TestHotMemoryWithinBudgetShowsEveryLine(t *testing.T) {
	ws := t.TempDir()
	hotFacts(t, ws, audience.Default, 1000)
	data, _ := os.ReadFile(filepath.Join(ws, workspace.User))
	if len(data) < 40000 {
		t.Fatalf("the file is only %d bytes", len(data))
	}
	for _, budget := range []int{0, 100000} {
		p := NewPromptBuilder(ws, nil, nil).WithHotMemory(HotMemory{Tokens: budget, Counter: consolidator.NewCounter()})
		prompt := p.Fixed(MemoryView{Audience: operator, Scopes: []audience.Scope{audience.Default}})
		if n := len(shownFacts(prompt)); n != 1000 {
			t.Errorf("budget %d: %d of 1000 facts shown", budget, n)
		}
		if strings.Contains(prompt, "truncated") || omittedRe.MatchString(prompt) {
			t.Errorf("budget %d: something is said to be left out", budget)
		}
		if got := p.TakeOverBudget(); len(got) != 0 {
			t.Errorf("budget %d: %v reported over budget", budget, got)
		}
	}
}

// A fact renders without its comment: an ephemeral one with the day it was
// confirmed, a durable one with the month, a permanent or undated one with
// nothing; the prompt says once what the dates mean.
func TestHotMemoryRendersLinesWithoutTheirComment(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"- Ana is in Lisbon this week. <!-- ephemeral 2026-11-26 src:4 -->", "- Ana is in Lisbon this week. (2026-11-26)"},
		{"- Ana prefers tea. <!-- durable 2026-11-26 src:4,9 -->", "- Ana prefers tea. (Nov 2026)"},
		{"* Ana prefers tea. <!-- 2026-11-26 -->", "* Ana prefers tea. (Nov 2026)"},
		{"- Ana's name is Ana. <!-- permanent 2026-11-26 -->", "- Ana's name is Ana."},
		{"  - Ana prefers tea. <!-- durable src:3 -->", "  - Ana prefers tea."},
		{"- Ana prefers tea.", "- Ana prefers tea."},
		{"Plain prose <!-- durable -->", "Plain prose <!-- durable -->"},
	} {
		it := memline.Item{Raw: c.line}
		if l, ok := memline.Parse(c.line); ok {
			it.Fact, it.Line = true, l
		}
		if got, _ := memory.ShownLine(it); got != c.want {
			t.Errorf("%q shown as %q, want %q", c.line, got, c.want)
		}
	}
	ws := t.TempDir()
	hotFacts(t, ws, audience.Default, 3, memline.Durable)
	prompt := NewPromptBuilder(ws, nil, nil).Fixed(MemoryView{Audience: operator, Scopes: []audience.Scope{audience.Default}})
	if strings.Count(prompt, datedNote) != 1 {
		t.Errorf("the note on dates is not shown once:\n%s", prompt)
	}
}

// deepRecorder records the scopes a deep Dream is asked for.
type deepRecorder struct {
	mu     sync.Mutex
	scopes []audience.Scope
	asked  chan struct{}
}

func (d *deepRecorder) RequestDeep(s audience.Scope) error {
	d.mu.Lock()
	d.scopes = append(d.scopes, s)
	d.mu.Unlock()
	d.asked <- struct{}{}
	return nil
}

// Each scope of a DM is fitted to its own budget; a turn that finds one
// over it asks Dream for a deep Dream of that scope alone, once until its
// files change, and the system message stays byte-identical between turns.
func TestTurnAsksForADeepDreamOfAScopeOverBudget(t *testing.T) {
	deep := &deepRecorder{asked: make(chan struct{}, 8)}
	env := scopeEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, false)
	env.g.deps.Prompts.WithHotMemory(HotMemory{Tokens: 1500, Counter: consolidator.NewCounter()})
	env.g.deps.Deep = deep
	hotFacts(t, env.ws, slackTeam.Home(), 300, memline.Durable)
	hotFacts(t, env.ws, anaDM.Home(), 5, memline.Durable)
	var systems []string
	for turn := range 3 {
		in := withAudience(inbound("dm", fmt.Sprint("hello ", turn)), anaDM)
		in.SenderID, in.SenderName = anaDM.Person, "Ana"
		if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
			t.Fatal(r.Err)
		}
		reqs := env.model.Requests()
		systems = append(systems, reqs[len(reqs)-1].Messages[0].Content)
	}
	select {
	case <-deep.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no deep Dream asked for")
	}
	if err := env.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(deep.scopes) != 1 || deep.scopes[0] != slackTeam.Home() {
		t.Errorf("deep Dreams asked for %v, want the team's scope once", deep.scopes)
	}
	if systems[0] != systems[1] || systems[1] != systems[2] {
		t.Error("the system message changed between turns")
	}
	if n := len(omittedRe.FindAllString(systems[0], -1)); n != 1 {
		t.Errorf("%d sentences about lines left out, want 1 (the team's part)", n)
	}
	team := systems[0][strings.Index(systems[0], "# Memory shared with the team"):strings.Index(systems[0], "# Memory from your direct messages")]
	if !omittedRe.MatchString(team) {
		t.Error("the sentence is not in the team's part")
	}
	if strings.Contains(systems[0], "recall tool") {
		t.Error("the prompt names a recall tool the turn does not have")
	}
}

// HotUsage counts every line of a scope as the prompt shows it, shown or
// not, and the lines the prompt shows: over budget, more tokens than the
// budget and fewer lines shown than held; within it, every line.
func TestHotUsageCountsTheScopeAsThePromptShowsIt(t *testing.T) {
	ws := t.TempDir()
	team := audience.Scope("team-slack-t1")
	hotFacts(t, ws, team, 400, memline.Durable, memline.Ephemeral)
	hotFacts(t, ws, audience.Default, 3, memline.Durable)
	counter := consolidator.NewCounter()
	p := NewPromptBuilder(ws, nil, nil).WithHotMemory(HotMemory{Tokens: 2000, Counter: counter})

	u := p.HotUsage(team)
	if u.Budget != 2000 || u.Tokens <= u.Budget || u.Total != 400 || u.Shown >= u.Total || u.Shown == 0 {
		t.Errorf("over budget: %+v", u)
	}
	// Every line's shown form, counted one by one, is what the prompt of
	// the whole file would cost within a line break each.
	data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(team.Dir()), workspace.User))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, it := range memline.ParseFile([]byte(strings.TrimSpace(string(data)))).Items {
		s, _ := memory.ShownLine(it)
		if strings.Contains(s, "<!--") {
			t.Fatalf("shown with its comment: %q", s)
		}
		want += counter.Count(s) + 1
	}
	if u.Tokens != want {
		t.Errorf("Tokens = %d, want %d", u.Tokens, want)
	}
	if again := p.HotUsage(team); again != u {
		t.Errorf("asked again without a change: %+v, then %+v", u, again)
	}
	within := p.HotUsage(audience.Default)
	if within.Tokens == 0 || within.Tokens > within.Budget || within.Shown != within.Total || within.Total != 3 {
		t.Errorf("within budget: %+v", within)
	}
	// A changed file is counted again (the count is kept until then).
	hotFacts(t, ws, audience.Default, 6, memline.Durable)
	if more := p.HotUsage(audience.Default); more.Total != 6 || more.Tokens <= within.Tokens {
		t.Errorf("after the file grew from 3 to 6 lines: %+v, before %+v", more, within)
	}
	if u := NewPromptBuilder(ws, nil, nil).HotUsage(team); u.Budget != 0 || u.Tokens != 0 || u.Shown != 400 {
		t.Errorf("without a budget: %+v", u)
	}
}
