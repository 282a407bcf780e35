package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// What a conversation costs in prompt tokens, through the built binary and
// the fake model (make bench-tokens).
//
// The script: 1,000 turns from a seeded generator. Nine turns in ten are
// small talk, one question of 20–90 words; every tenth plants a fact ("Fact
// 7 to remember: the code word for project 7 is …"). The fake is
// llmtest.MemoryModel: it answers a question from the memory files in the
// prompt or with "I don't know.", and archives statements only, so an
// archive keeps the planted facts the way a model keeps what is worth
// keeping. After the last turn, `dreamgate dream run`.
//
// Prompt tokens are the fake's cl100k counts of each request as a provider
// sees it (the tools' JSON, then each message's), summed by purpose and
// scaled to 1,000 turns. The cacheable share of a chat request is the
// share of its bytes (in that same form) that are a byte-identical prefix
// of the previous chat request: what a provider's prompt cache can serve.
//
// Two paces: as run (turns milliseconds apart), and one turn a minute,
// simulated with the binary's test clock (DREAMGATE_TEST_CLOCK): the
// gateway's clock moves forward at every read, so each turn's prompt is
// stamped a minute or more after the one before, as a person's would be.
// clock-min/turn reports how far apart the prompts' times really were.
//
// The settings: the terminal (one person) at the default conversation
// budget on a 128K and a 32K model, and on a 128K model without it (the
// whole window, nanobot's rule); and a Slack thread in which two people
// take turns mentioning the bot, through the Slack fake and `dreamgate
// gateway` — the speaker changes every turn, as it does in a team channel.

// tokenTurns is the length of the script.
const tokenTurns = 1000

// tokenClockStart is the simulated clock's start. A turn reads the
// gateway's clock about five times, so a step of 12 s per read puts the
// turns a minute apart (clock-min/turn reports what it really was).
const (
	tokenClockStart = "2026-03-02T09:00:00Z"
	tokenClockStep  = "12s"
)

// smallTalk is the vocabulary of the filler questions; it has no word the
// fake takes for a file to read, a wish about the assistant or a fact
// about the speaker.
var smallTalk = strings.Fields(`the weather team lunch coffee office train morning evening weekend plan
idea meeting slides budget review design draft garden music book film trip city river
quick slow long short early late busy quiet bright rainy sunny cold warm new old big small
today tomorrow again later maybe really still just also only even perhaps somehow
think wonder guess hope feel seem look sound go come take make bring keep move start finish
about with from into over under after before during around between through without
and or but so because while if when though then than as like`)

// scriptLine is turn i of the script.
func scriptLine(rng *rand.Rand, i int) string {
	if i%10 == 9 {
		n := i/10 + 1
		return fmt.Sprintf("Fact %d to remember: the code word for project %d is %s-%s.", n, n,
			smallTalk[rng.IntN(len(smallTalk))], smallTalk[rng.IntN(len(smallTalk))])
	}
	words := make([]string, 20+rng.IntN(71))
	for j := range words {
		words[j] = smallTalk[rng.IntN(len(smallTalk))]
	}
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ") + "?"
}

func tokenScript() []string {
	rng := rand.New(rand.NewPCG(2026, 21))
	lines := make([]string, tokenTurns)
	for i := range lines {
		lines[i] = scriptLine(rng, i)
	}
	return lines
}

// BenchmarkTokens plays the script in each setting and reports what it
// cost. One iteration is one whole run (about a minute); run it with
// -benchtime 1x.
func BenchmarkTokens(b *testing.B) {
	if os.Getenv("DREAMGATE_BENCH_TOKENS") == "" {
		b.Skip("plays eight conversations of 1,000 turns (about 5 minutes): run it with make bench-tokens")
	}
	for _, setting := range []struct {
		name        string
		window      int
		slack       bool
		wholeWindow bool // agent.conversationTokens 0
	}{
		{"terminal/128K", 128000, false, false},
		{"terminal/32K", 32000, false, false},
		{"terminal/128K-whole-window", 128000, false, true},
		{"slack-two-people/128K", 128000, true, false},
	} {
		for _, minute := range []bool{false, true} {
			pace := "as-run"
			if minute {
				pace = "turn-a-minute"
			}
			b.Run(setting.name+"/"+pace, func(b *testing.B) {
				var f tokenFigures
				for b.Loop() {
					f = playTokenScript(b, setting.window, setting.wholeWindow, setting.slack, minute)
				}
				f.report(b)
			})
		}
	}
}

// playTokenScript plays the script once and measures the fake's request
// log.
func playTokenScript(b *testing.B, window int, wholeWindow, slack, minute bool) tokenFigures {
	h := newHarness(b)
	h.llm.SetResponder(llmtest.MemoryModel)
	h.set("llm.contextWindow", window)
	if wholeWindow {
		h.set("agent.conversationTokens", 0)
	}
	h.set("dream.cron", "0 0 1 1 *") // Dream runs once, after the script
	var env []string
	if minute {
		env = append(env, testClockEnv+"="+tokenClockStart+","+tokenClockStep)
	}
	lines := tokenScript()
	if slack {
		playSlack(b, h, env, lines)
	} else {
		playTerminal(b, h, env, lines)
	}
	if r := h.run("dream", "run"); r.code != 0 {
		b.Fatalf("dream run: exit %d: %s", r.code, r.stderr)
	}
	return measureTokens(b, h.llm.Requests(), len(lines))
}

// playTerminal pipes the lines into `dreamgate chat`, each once the model
// has been asked about the one before, as a person would type them.
func playTerminal(b *testing.B, h *harness, env []string, lines []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "--config", h.cfgPath, "chat")
	cmd.Env = append([]string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(stdin)
	seen := 0
	for _, line := range lines {
		if _, err := w.WriteString(line + "\n"); err != nil {
			b.Fatalf("write: %v; stderr:\n%s", err, stderr.String())
		}
		if err := w.Flush(); err != nil {
			b.Fatalf("write: %v; stderr:\n%s", err, stderr.String())
		}
		seen = waitChatCall(ctx, b, h.llm, seen, line, stderr)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("chat: %v; stderr:\n%s", err, stderr.String())
	}
}

// playSlack runs `dreamgate gateway` with Slack against the fake: Ana
// mentions the bot in a channel, which answers in a thread; then Bob and
// Ana take turns in that thread, mentioning the bot.
func playSlack(b *testing.B, h *harness, env []string, lines []string) {
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"U1": "Ana", "U2": "Bob"}})
	b.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
	})
	p := h.startProc(b, env...)
	if !waitUp(b, p, "slack") {
		b.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	mention := "<@" + sl.BotUserID() + "> "
	thread, seen := "", 0
	for i, line := range lines {
		ev := fakeslack.Event{Channel: "C1", User: []string{"U1", "U2"}[i%2], Text: mention + line, ThreadTS: thread}
		ds, err := sl.InjectPost(ev)
		if err != nil || len(ds) == 0 {
			b.Fatalf("inject turn %d: %v", i, err)
		}
		if thread == "" {
			thread = ds[0].Event.TS
		}
		seen = waitChatCall(ctx, b, h.llm, seen, line, p.stderr)
	}
	if !p.stop(30 * time.Second) {
		b.Fatalf("gateway did not stop; log:\n%s", p.stderr.String())
	}
}

// waitChatCall waits for the chat call that answers line, looking at the
// requests from seen on, and returns how many requests there were then.
func waitChatCall(ctx context.Context, b *testing.B, srv *llmtest.Server, seen int, line string, log *testkit.Buffer) int {
	for {
		reqs, err := srv.WaitRequests(ctx, seen+1)
		if err != nil {
			b.Fatalf("no chat call for %q: %v; log:\n%s", line, err, log.String())
		}
		for _, r := range reqs[seen:] {
			if tokenPurpose(r) == llm.PurposeChat && r.Problem == "" &&
				strings.HasSuffix(r.Messages[len(r.Messages)-1].Content, line) {
				return len(reqs)
			}
		}
		seen = len(reqs)
	}
}

// tokenPurpose tells the pipeline's calls apart as llmtest.MemoryModel
// does: "chat", "archive" or "dream".
func tokenPurpose(r llmtest.Request) string {
	user := ""
	for _, m := range r.Messages {
		if m.Role == llm.RoleUser {
			user = m.Content
		}
	}
	switch {
	case len(r.Tools) == 0 && strings.HasPrefix(user, "Archive this part of the conversation"):
		return llm.PurposeArchive
	case strings.HasPrefix(user, "## Archive entries"), strings.HasPrefix(user, "## Findings to apply"),
		strings.HasPrefix(user, "## Deep Dream"), strings.HasPrefix(user, "## This pass must free"):
		return "dream"
	case len(r.Tools) > 0:
		return llm.PurposeChat
	}
	return "other"
}

// tokenFigures is what one run cost.
type tokenFigures struct {
	turns  int
	prompt map[string]int // prompt tokens by purpose
	calls  map[string]int
	// turnCalls are the chat calls that open a turn (the others carry a
	// tool's result back).
	turnCalls int
	// Chat requests: their cacheable shares (from the second on), the
	// largest prompt, the tokens the fake's prompt cache held.
	shares       []float64
	maxChat      int
	cachedChat   int
	clockMinutes float64 // mean minutes between two turns' prompt times
}

// promptTime finds the time a chat prompt is stamped with.
var promptTime = regexp.MustCompile(`\[Now: [A-Za-z]+ (\d{4}-\d\d-\d\d \d\d:\d\d)`)

func measureTokens(b *testing.B, reqs []llmtest.Request, turns int) tokenFigures {
	f := tokenFigures{turns: turns, prompt: map[string]int{}, calls: map[string]int{}}
	var prev []byte
	var first, last time.Time
	for _, r := range reqs {
		if r.Problem != "" {
			b.Fatalf("the fake refused a request: %s", r.Problem)
		}
		p := tokenPurpose(r)
		f.prompt[p] += r.PromptTokens
		f.calls[p]++
		if p != llm.PurposeChat {
			continue
		}
		if r.Messages[len(r.Messages)-1].Role == llm.RoleUser {
			f.turnCalls++ // a turn's first call; a tool's result follows in another
		}
		f.maxChat = max(f.maxChat, r.PromptTokens)
		f.cachedChat += r.CachedTokens
		view := providerView(b, r.Body)
		if prev != nil {
			f.shares = append(f.shares, float64(commonPrefixLen(view, prev))/float64(len(view)))
		}
		prev = view
		if m := promptTime.FindSubmatch(r.Body); m != nil {
			if t, err := time.Parse("2006-01-02 15:04", string(m[1])); err == nil {
				if first.IsZero() {
					first = t
				}
				last = t
			}
		}
	}
	if f.turnCalls != turns {
		b.Errorf("%d turns' first chat calls for %d turns: the figures are not per turn", f.turnCalls, turns)
	}
	if f.calls["other"] > 0 {
		b.Errorf("%d calls of no known purpose", f.calls["other"])
	}
	if turns > 1 {
		f.clockMinutes = last.Sub(first).Minutes() / float64(turns-1)
	}
	return f
}

// providerView is a request as a provider reads its prompt: the tools'
// JSON, then each message's JSON, in order.
func providerView(b *testing.B, body []byte) []byte {
	var top struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		b.Fatal(err)
	}
	out := append([]byte(nil), top.Tools...)
	for _, m := range top.Messages {
		out = append(out, m...)
	}
	return out
}

func commonPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (f tokenFigures) report(b *testing.B) {
	per := func(n int) float64 { return float64(n) / 1e6 * 1000 / float64(f.turns) }
	var sum float64
	high := 0
	for _, s := range f.shares {
		sum += s
		if s >= 0.9 {
			high++
		}
	}
	mean, highShare := 0.0, 0.0
	if len(f.shares) > 0 {
		mean, highShare = 100*sum/float64(len(f.shares)), 100*float64(high)/float64(len(f.shares))
	}
	cached := 0.0
	if n := f.prompt[llm.PurposeChat]; n > 0 {
		cached = 100 * float64(f.cachedChat) / float64(n)
	}
	b.ReportMetric(per(f.prompt[llm.PurposeChat]), "chat-Mtok/1000turns")
	b.ReportMetric(per(f.prompt[llm.PurposeArchive]), "archive-Mtok/1000turns")
	b.ReportMetric(per(f.prompt["dream"]), "dream-Mtok/1000turns")
	b.ReportMetric(mean, "cache-share-%")
	b.ReportMetric(highShare, "share>=90%-%")
	b.ReportMetric(cached, "fake-cached-%")
	b.ReportMetric(float64(f.maxChat)/1000, "max-chat-Ktok")
	b.ReportMetric(f.clockMinutes, "clock-min/turn")
	var s bytes.Buffer
	fmt.Fprintf(&s, "%d turns: prompt tokens chat %.2fM, archive %.2fM (%d calls), Dream %.2fM (%d calls); largest chat prompt %d; ",
		f.turns, per(f.prompt[llm.PurposeChat]), per(f.prompt[llm.PurposeArchive]), f.calls[llm.PurposeArchive],
		per(f.prompt["dream"]), f.calls["dream"], f.maxChat)
	fmt.Fprintf(&s, "cacheable prefix of the previous chat request %.1f%% on average, ≥ 90%% in %.1f%% of them; the fake's cache held %.1f%%; prompts %.1f min apart",
		mean, highShare, cached, f.clockMinutes)
	b.Log(s.String())
}
