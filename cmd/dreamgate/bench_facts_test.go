package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Tokens flat with age: what a turn and a Dream cost when memory already
// holds 100, 1,000 or 10,000 facts (make bench-tokens). The workspace's
// USER.md is seeded with that many dated facts — a year of them, a tenth
// permanent, a fifth ephemeral — then BenchmarkTokens' script is played
// at the terminal (its first factsTurns turns, a fact planted every tenth)
// and Dream runs once. Reported: chat prompt tokens per turn (the memory
// shown within memory.hotTokens, 12,000 on the 128K window) and Dream's
// prompt tokens per 1,000 turns (phase 1 and 2 read the files whole).

const factsTurns = 200

func BenchmarkTokensByFacts(b *testing.B) {
	if os.Getenv("DREAMGATE_BENCH_TOKENS") == "" {
		b.Skip("plays three conversations of 200 turns: run it with make bench-tokens")
	}
	for _, facts := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("facts=%d", facts), func(b *testing.B) {
			var f tokenFigures
			for b.Loop() {
				f = playWithFacts(b, facts)
			}
			b.ReportMetric(float64(f.prompt[llm.PurposeChat])/float64(f.turns), "chat-tok/turn")
			b.ReportMetric(float64(f.maxChat), "max-chat-tok")
			b.ReportMetric(float64(f.prompt["dream"])/1e6*1000/float64(f.turns), "dream-Mtok/1000turns")
			b.ReportMetric(float64(f.calls["dream"]), "dream-calls")
		})
	}
}

// seedFacts writes n facts into USER.md of the workspace ws.
func seedFacts(b *testing.B, ws string, n int) {
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var s strings.Builder
	s.WriteString("# Users\n\n")
	for i := range n {
		l := memline.Line{Text: fmt.Sprintf("Colleague %d works on the %s team and prefers %s meetings.", i,
			smallTalk[i%len(smallTalk)], smallTalk[(i*7)%len(smallTalk)])}
		l.Priority = memline.Durable
		switch {
		case i%10 == 0:
			l.Priority = memline.Permanent
		case i%5 == 1:
			l.Priority = memline.Ephemeral
		}
		l.Confirm(start.Add(time.Duration(i)*365*24*time.Hour/time.Duration(n)), i+1)
		s.WriteString(l.String() + "\n")
	}
	if err := os.WriteFile(filepath.Join(ws, workspace.User), []byte(s.String()), 0o600); err != nil {
		b.Fatal(err)
	}
}

func playWithFacts(b *testing.B, facts int) tokenFigures {
	h := newHarness(b)
	h.llm.SetResponder(llmtest.MemoryModel)
	h.set("dream.cron", "0 0 1 1 *") // Dream runs once, after the script
	h.app().close()                  // the workspace, from the template
	seedFacts(b, h.ws, facts)
	lines := tokenScript()[:factsTurns]
	playTerminal(b, h, nil, lines)
	if r := h.run("dream", "run"); r.code != 0 {
		b.Fatalf("dream run: exit %d: %s", r.code, r.stderr)
	}
	return measureTokens(b, h.llm.Requests(), len(lines))
}
