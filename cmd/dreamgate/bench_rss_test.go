package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session/sessiontest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// BenchmarkChatOneShotFullBudget runs `dreamgate chat -m hi` in a
// conversation holding about 12 KB not yet archived (140 messages of ~90
// bytes: as many bytes as the default conversation budget has tokens),
// and in one holding about 45 KB (500 messages: some 11,000 tokens, the
// budget nearly full), each beside the same command in an empty
// conversation: peak RSS (maxRSS-MB, VmHWM) and its ratio to the empty
// one's (rss-x-empty), and the time as a ratio (x-empty).
func BenchmarkChatOneShotFullBudget(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"12KB", 140}, {"45KB", 500}} {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b)
			h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
			h.run("chat", "-m", "hi") // the first run creates the workspace
			sessiontest.WriteLong(b, sessionsDir(h.state), "terminal:full", c.n, c.n)
			var full, empty []runResult
			b.ResetTimer()
			for i := range b.N {
				for _, sess := range []string{"full", fmt.Sprint("empty", i)} {
					r := h.run("chat", "--session", sess, "-m", "hi")
					if r.code != 0 {
						b.Fatalf("exit %d: %s", r.code, r.stderr)
					}
					if sess == "full" {
						full = append(full, r)
					} else {
						empty = append(empty, r)
					}
				}
			}
			b.StopTimer()
			reportBeside(b, full, empty)
		})
	}
}

// reportBeside reports runs' peak RSS and median time against the runs
// of an empty conversation made beside them.
func reportBeside(b *testing.B, full, empty []runResult) {
	peak := func(rs []runResult) (kb int64) {
		for _, r := range rs {
			kb = max(kb, r.maxRSSKB)
		}
		return kb
	}
	b.ReportMetric(float64(peak(full))/1024, "maxRSS-MB")
	b.ReportMetric(float64(peak(empty))/1024, "empty-maxRSS-MB")
	b.ReportMetric(float64(peak(full))/float64(peak(empty)), "rss-x-empty")
	var ft, et []time.Duration
	for i := range full {
		ft, et = append(ft, full[i].elapsed), append(et, empty[i].elapsed)
	}
	b.ReportMetric(float64(percentile(ft, 50))/float64(percentile(et, 50)), "x-empty")
}

// A one-shot turn in a conversation holding about 12 KB not yet archived
// (as many bytes as the default conversation budget has tokens) needs no
// exact count, so it never loads the tokenizer's vocabulary (about 7 MB):
// its peak RSS stays within 15% of the same turn in an empty conversation
// (1.4× when the vocabulary was loaded), measured beside it.
func TestOneShotInAFullConversationLoadsNoVocabulary(t *testing.T) {
	full, empty := oneShotPeaks(t, 140)
	if full*100 > empty*115 {
		t.Errorf("peak RSS %d KiB in the full conversation against %d KiB in an empty one (%.2f×)", full, empty, float64(full)/float64(empty))
	}
}

// A one-shot turn in a conversation whose tokens nearly fill the budget
// (about 45 KB, 11,000 tokens not yet archived) needs the exact count of
// every message, and so the vocabulary: internal/tokens' compact one costs
// about 1.2 MiB and counting a few more, so its peak RSS stays within 30%
// of the same turn in an empty conversation (1.44–1.55× with tiktoken-go's
// vocabulary, a map of 100,256 strings; 1.2× now).
func TestOneShotNearItsBudgetCountsInLittleMemory(t *testing.T) {
	full, empty := oneShotPeaks(t, 500)
	if full*100 > empty*130 {
		t.Errorf("peak RSS %d KiB in the conversation near its budget against %d KiB in an empty one (%.2f×)", full, empty, float64(full)/float64(empty))
	}
}

// oneShotPeaks runs `chat -m hi` three times in a conversation of n
// messages not yet archived and three times in an empty one, alternately,
// and returns the peak RSS of each, in KiB.
func oneShotPeaks(t *testing.T, n int) (full, empty int64) {
	h := newHarness(t)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	h.run("chat", "-m", "hi")
	sessiontest.WriteLong(t, sessionsDir(h.state), "terminal:full", n, n)
	for range 3 {
		for _, sess := range []string{"full", "empty"} {
			r := h.run("chat", "--session", sess, "-m", "hi")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if sess == "full" {
				full = max(full, r.maxRSSKB)
			} else {
				empty = max(empty, r.maxRSSKB)
			}
		}
	}
	return full, empty
}
