package llm_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A hanging model, on a fake clock: the tries' timers run on f.clock, so
// a test moves time and never waits on it. Timeout is an hour, the first
// byte's limit 20 s.
func newHangFleet(t *testing.T, maxTries int, names ...string) *fleet {
	t.Helper()
	f := newFleet(t, func(_ string, c *llm.Config) {
		c.Timeout = time.Hour
		c.FirstByte = 20 * time.Second
		c.MaxTries = maxTries
	}, names...)
	for _, m := range f.model {
		llm.SetFakeClock(m.Client(), f.clock)
	}
	return f
}

type chatResult struct {
	resp llm.Response
	err  error
}

// start runs one call of chain on its own goroutine.
func start(ctx context.Context, chain *llm.Chain, req llm.Request) <-chan chatResult {
	done := make(chan chatResult, 1)
	go func() {
		resp, err := chain.Chat(ctx, req)
		done <- chatResult{resp, err}
	}()
	return done
}

// streamed is a chat turn's request: it streams, into shown.
func streamed(text string, shown *strings.Builder) llm.Request {
	req := userReq(text)
	req.OnDelta = func(s string) { shown.WriteString(s) }
	return req
}

// A streamed call to a model that hangs goes to the next model once the
// first byte's limit has passed: one try, not five full timeouts and the
// backoff between them. The hanging model is then passed over; after its
// cooldown one call tries it, again for no longer than the limit.
func TestChainPassesAHangingStreamOnAtTheFirstByteLimit(t *testing.T) {
	f := newHangFleet(t, 5, "primary", "backup")
	f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(time.Hour, llmtest.Text("late")) })
	f.srv["backup"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup answers") })
	chain := f.chain(llm.PurposeChat, "primary", "backup")
	began := f.clock.Now()

	var shown strings.Builder
	done := start(t.Context(), chain, streamed("hello", &shown))
	if _, err := f.srv["primary"].WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(20 * time.Second)
	r := <-done
	if r.err != nil || r.resp.Content != "backup answers" || shown.String() != "backup answers" {
		t.Fatalf("Chat = %q (shown %q), %v; want the backup's answer", r.resp.Content, shown.String(), r.err)
	}
	if took := f.clock.Now().Sub(began); took != 20*time.Second {
		t.Errorf("the answer came %v after the call began, want the first byte's limit", took)
	}
	if n := f.requests("primary"); n != 1 {
		t.Errorf("the hanging model was tried %d times, want once", n)
	}
	if st := chain.Status(); st.Models[0].Reason != "no answer began within 20s" {
		t.Errorf("the primary's reason %q", st.Models[0].Reason)
	}

	// Passed over while it cools down.
	shown.Reset()
	if resp, err := chain.Chat(t.Context(), streamed("again", &shown)); err != nil || resp.Content != "backup answers" {
		t.Fatalf("while cooling: %q, %v", resp.Content, err)
	}
	if n := f.requests("primary"); n != 1 {
		t.Errorf("the cooling model was asked (%d requests)", n)
	}

	// Its trial after the cooldown waits the limit, not the timeout.
	f.clock.Advance(31 * time.Second)
	shown.Reset()
	done = start(t.Context(), chain, streamed("trial", &shown))
	if _, err := f.srv["primary"].WaitRequests(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(20 * time.Second)
	if r := <-done; r.err != nil || r.resp.Content != "backup answers" {
		t.Fatalf("trial: %q, %v; want the backup's answer", r.resp.Content, r.err)
	}
	if n := f.logs.Count(slog.LevelWarn, "model chain switched: another model answers until the one before it serves again"); n != 1 {
		t.Errorf("%d switch lines, want 1", n)
	}
}

// The limit is on the first byte only: an answer that has begun may take
// longer than it between pieces (up to Timeout), and is not cut off.
func TestChainFirstByteLimitEndsWithTheFirstByte(t *testing.T) {
	f := newHangFleet(t, 5, "primary", "backup")
	// The pieces come apart, so the rest is not read with the first.
	f.srv["primary"].Push(llmtest.Reply{Text: "one two three", FragmentDelay: 20 * time.Millisecond})
	chain := f.chain(llm.PurposeChat, "primary", "backup")

	req := userReq("hello")
	var shown strings.Builder
	req.OnDelta = func(s string) {
		if shown.Len() == 0 {
			// The answer has begun; a minute passes before the rest.
			f.clock.Advance(time.Minute)
		}
		shown.WriteString(s)
	}
	resp, err := chain.Chat(t.Context(), req)
	if err != nil || resp.Content != "one two three" || shown.String() != "one two three" {
		t.Fatalf("Chat = %q (shown %q), %v; want the primary's whole answer", resp.Content, shown.String(), err)
	}
	if n := f.requests("backup"); n != 0 {
		t.Errorf("the backup was asked %d times", n)
	}
}

// Unstreamed calls (archive, Dream), whose answer arrives whole, wait the
// whole timeout, once, before the next model is asked; a model with no
// other after it is not held to the first byte's limit.
func TestChainWholeTimeoutWhereThereIsNoStreamOrNoFallback(t *testing.T) {
	t.Run("unstreamed", func(t *testing.T) {
		f := newHangFleet(t, 5, "primary", "backup")
		f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(2*time.Hour, llmtest.Text("late")) })
		f.srv["backup"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("- a fact") })
		chain := f.chain(llm.PurposeArchive, "primary", "backup")
		done := start(t.Context(), chain, llm.Request{Purpose: llm.PurposeArchive, Messages: userReq("archive this").Messages})
		if _, err := f.srv["primary"].WaitRequests(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute) // past the first byte's limit: nothing
		f.clock.Advance(time.Hour)
		if r := <-done; r.err != nil || r.resp.Content != "- a fact" {
			t.Fatalf("Chat = %q, %v; want the backup's answer", r.resp.Content, r.err)
		}
		if n := f.requests("primary"); n != 1 {
			t.Errorf("the hanging model was tried %d times, want once", n)
		}
		if st := chain.Status(); st.Models[0].Reason != "timed out after 3600s" {
			t.Errorf("the primary's reason %q", st.Models[0].Reason)
		}
	})
	t.Run("no model after it", func(t *testing.T) {
		f := newHangFleet(t, 1, "only")
		f.srv["only"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(2*time.Hour, llmtest.Text("late")) })
		chain := f.chain(llm.PurposeChat, "only")
		var shown strings.Builder
		done := start(t.Context(), chain, streamed("hello", &shown))
		if _, err := f.srv["only"].WaitRequests(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		f.clock.Advance(time.Hour)
		r := <-done
		if r.err == nil || !strings.Contains(r.err.Error(), "timed out after 3600s") {
			t.Fatalf("err = %v, want the whole timeout", r.err)
		}
	})
}

// BenchmarkChainFallbackOnAHang is the time to the first answer of a
// chain whose first model hangs (the backup answers), beside a healthy
// first model's, on the real clock: streamed (a chat turn) and unstreamed
// (archive, Dream), at a 5 s and a 120 s timeout, the first byte's limit
// and the backoff left at their defaults. The hanging cases wait real seconds, so they run
// only with DREAMGATE_BENCH_HANG=1 (docs/development.md):
//
//	DREAMGATE_BENCH_HANG=1 go test -run '^$' -bench ChainFallbackOnAHang -benchtime 1x ./llm/
func BenchmarkChainFallbackOnAHang(b *testing.B) {
	for _, bc := range []struct {
		name    string
		hang    bool
		timeout time.Duration
		stream  bool
	}{
		{"healthy/streamed", false, 5 * time.Second, true},
		{"healthy/unstreamed", false, 5 * time.Second, false},
		{"hanging/timeout-5s/streamed", true, 5 * time.Second, true},
		{"hanging/timeout-5s/unstreamed", true, 5 * time.Second, false},
		{"hanging/timeout-120s/streamed", true, 120 * time.Second, true},
		{"hanging/timeout-120s/unstreamed", true, 120 * time.Second, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.hang && os.Getenv("DREAMGATE_BENCH_HANG") == "" {
				b.Skip("waits real timeouts; set DREAMGATE_BENCH_HANG=1")
			}
			primary, backup := llmtest.New(b), llmtest.New(b)
			primary.SetResponder(func(llmtest.Request) llmtest.Reply {
				if bc.hang {
					return llmtest.Slow(time.Hour, llmtest.Text("late"))
				}
				return llmtest.Text("primary answers")
			})
			backup.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup answers") })
			var took time.Duration
			for range b.N {
				// A fresh chain each time: a cooled model would be passed over.
				// The production backoff (1 s doubling), not newClient's.
				mod := func(c *llm.Config) { c.Timeout, c.BaseDelay, c.MaxDelay = bc.timeout, 0, 0 }
				chain := llm.NewChain(llm.PurposeChat, []*llm.Named{
					llm.NewNamed("primary", newClient(b, primary.URL(), mod)),
					llm.NewNamed("backup", newClient(b, backup.URL(), mod)),
				}, nil)
				req := userReq("hello")
				first := make(chan struct{})
				if bc.stream {
					var once sync.Once
					req.OnDelta = func(string) { once.Do(func() { close(first) }) }
				}
				start := time.Now()
				if _, err := chain.Chat(b.Context(), req); err != nil {
					b.Fatal(err)
				}
				if bc.stream {
					<-first
				}
				took += time.Since(start)
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s/answer")
		})
	}
}
