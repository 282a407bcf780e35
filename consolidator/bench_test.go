package consolidator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
)

// proseWords is a vocabulary for generated English-like text (no downloads).
var proseWords = strings.Fields(`the of and to a in is it you that he was for on are with as I his they be at one
have this from or had by hot word but what some we can out other were all there when up use your how said an
each she which do their time if will way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my over know water than call first who
may down side been now find any new work part take get place made live where after back little only round man
year came show every good me give our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set three want air well also play small
end put home read hand port large spell add even land here must big high such follow act why ask men change went
light kind off need house picture try us again animal point mother world near build self earth father deploy
server database migration release customer invoice schedule meeting budget project review staging production`)

// prose returns about n bytes of generated English-like text.
func prose(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 42))
	var b strings.Builder
	for b.Len() < n {
		words := 5 + rng.IntN(16)
		for i := range words {
			w := proseWords[rng.IntN(len(proseWords))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			if i < words-1 && rng.IntN(9) == 0 {
				b.WriteByte(',')
			}
		}
		b.WriteString([]string{".", ".", ".", "?", "!"}[rng.IntN(5)])
		if rng.IntN(6) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// BenchmarkCountProse: tokenizer throughput on generated prose (target:
// at least 1M tokens/s).
func BenchmarkCountProse(b *testing.B) {
	text := prose(1<<20, 1)
	c := NewCounter()
	tokens := c.Count(text) // also loads the vocabulary outside the timing
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		c.Count(text)
		n++
	}
	b.ReportMetric(float64(tokens*n)/time.Since(start).Seconds(), "tokens/s")
}

// BenchmarkBeforeNothingToArchive: the per-turn budget check, with the
// rendering of the session's Recent history, on a 10,000-message session
// with nothing to archive (target: under 50µs).
func BenchmarkBeforeNothingToArchive(b *testing.B) {
	system := prose(20000, 2) // a 20 KB system prompt
	cases := []struct {
		name  string
		cw    int
		fresh bool // Prompt.Fixed is a new string each time, as the gateway's is
	}{
		// 50 unarchived messages (~60 KB): over the byte bound, so the
		// exact, cached counts decide.
		{"exact", 128000, false},
		{"exact-new-fixed-string", 128000, true},
		// A window so large the byte bound alone decides.
		{"bound", 1000000, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var msgs []llm.Message
			for i := range 5000 {
				msgs = append(msgs, user(prose(200+i%400, uint64(i))), assistant(prose(1000, uint64(i+1))))
			}
			s := newSession("bench", msgs...)
			s.lc = len(msgs) - 50
			store, err := history.Open(b.TempDir(), history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			c := New(newFakeModel(b), store, Config{ContextWindow: tc.cw, MaxTokens: 4096}, nil)
			prompt := func() Prompt { return Prompt{Fixed: system} }
			if tc.fresh {
				prompt = func() Prompt { return Prompt{Fixed: strings.Clone(system)} }
			}
			if _, _, err := c.Before(context.Background(), s, prompt()); err != nil { // first count, untimed
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				_, rep, err := c.Before(context.Background(), s, prompt())
				if err != nil || rep.Rounds != 0 {
					b.Fatal(rep, err)
				}
			}
		})
	}
}

// usageModel answers archive calls with a short summary and reports usage
// as a provider would: cl100k tokens of what it was sent and what it wrote.
type usageModel struct{ c *Counter }

func (m usageModel) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	prompt := 0
	for _, msg := range req.Messages {
		prompt += m.c.Message(msg)
	}
	// A summary of about 3% of the transcript, at least one fact.
	facts := max(1, prompt/30/12)
	var b strings.Builder
	for i := range facts {
		fmt.Fprintf(&b, "- fact %d about the project and the people in it\n", i)
	}
	answer := b.String()
	return llm.Response{
		Content: answer, FinishReason: llm.FinishStop,
		Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: m.c.Count(answer), Calls: 1},
	}, nil
}

// BenchmarkArchiveTokensPer1000Turns runs a scripted 1,000-turn
// conversation (a third of the turns use a tool) through Before and After
// each turn, as the gateway does, with Dream consuming history every
// 100 turns, and reports what archiving cost in model tokens.
func BenchmarkArchiveTokensPer1000Turns(b *testing.B) {
	for _, cw := range []int{128000, 32000} {
		b.Run(fmt.Sprint("window-", cw), func(b *testing.B) {
			var rep Report
			var convTokens int
			for b.Loop() {
				rep, convTokens = scriptedConversation(b, cw, 1000)
			}
			b.ReportMetric(float64(rep.Usage.PromptTokens+rep.Usage.CompletionTokens), "archive-tokens/1000turns")
			b.ReportMetric(float64(rep.Usage.Calls), "archive-calls/1000turns")
			b.ReportMetric(float64(convTokens), "conversation-tokens")
		})
	}
}

func scriptedConversation(b *testing.B, cw, turns int) (Report, int) {
	store, err := history.Open(b.TempDir(), history.Options{})
	if err != nil {
		b.Fatal(err)
	}
	counter := NewCounter()
	c := New(usageModel{counter}, store, Config{ContextWindow: cw, MaxTokens: 4096}, nil)
	s := newSession("slack:C1:1712.55")
	system := prose(8000, 9) // ~2K tokens of identity, AGENTS.md, memory files, tool definitions
	var total Report
	add := func(r Report, err error) {
		if err != nil {
			b.Fatal(err)
		}
		total.Usage = total.Usage.Add(r.Usage)
		total.Rounds += r.Rounds
		total.Archived += r.Archived
	}
	conv := 0
	for i := range turns {
		msgs := []llm.Message{user(prose(250, uint64(i)))}
		s.append(msgs[0])
		p, r, err := c.Before(context.Background(), s, Prompt{Fixed: system})
		add(r, err)
		if i%3 == 0 {
			id := fmt.Sprint("call", i)
			msgs = append(msgs,
				assistant("", call(id, "read_file", `{"path":"memory/MEMORY.md"}`)),
				toolResult(id, "read_file", prose(1200, uint64(i+7))))
		}
		msgs = append(msgs, assistant(prose(600, uint64(i+3))))
		s.append(msgs[1:]...)
		for _, m := range msgs {
			conv += counter.Message(m)
		}
		add(c.After(context.Background(), s, p, Sent{}))
		if i%100 == 99 {
			last, _ := store.LastCursor()
			if err := store.SetDreamCursor(last); err != nil {
				b.Fatal(err)
			}
		}
	}
	return total, conv
}
