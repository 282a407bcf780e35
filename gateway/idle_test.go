package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
)

// fakeConsolidator records which sessions were archived.
type fakeConsolidator struct {
	mu       sync.Mutex
	archived []string
	done     chan string
}

func (f *fakeConsolidator) Before(_ context.Context, _ consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error) {
	return p, consolidator.Report{}, nil
}
func (f *fakeConsolidator) After(context.Context, consolidator.Session, consolidator.Prompt, consolidator.Sent) (consolidator.Report, error) {
	return consolidator.Report{}, nil
}
func (f *fakeConsolidator) ArchiveTail(_ context.Context, s consolidator.Session) (consolidator.Report, error) {
	f.mu.Lock()
	f.archived = append(f.archived, s.Key())
	f.mu.Unlock()
	base, msgs := s.Tail()
	n := base + len(msgs)
	err := s.SetLastConsolidated(n, "- archived")
	f.done <- s.Key()
	return consolidator.Report{Archived: n}, err
}
func (f *fakeConsolidator) Status(consolidator.Session, consolidator.Prompt) consolidator.Budget {
	return consolidator.Budget{Estimate: 1234, Limit: 6144, Trigger: 4096, Target: 2457}
}

// newIdleEnv is a gateway with idle compaction after 15 minutes, a fake
// consolidator and a clock the test moves with advance.
func newIdleEnv(t *testing.T) (env *testEnv, fc *fakeConsolidator, advance func(time.Duration)) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fc = &fakeConsolidator{done: make(chan string, 4)}
	env = newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(c *Config, d *Deps) {
			c.IdleCompactAfter = 15 * time.Minute
			d.Consolidator = fc
			d.Now = clock
		})
	env.g.deps.Sessions.SetClock(clock)
	advance = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	return env, fc, advance
}

func TestIdleSessionsAreArchived(t *testing.T) {
	env, fc, advance := newIdleEnv(t)
	wait(t, must(env.g.Submit(t.Context(), inbound("quiet", "short chat"))))
	wait(t, must(env.g.Submit(t.Context(), inbound("busy", "another chat"))))

	env.g.compactIdle()
	select {
	case k := <-fc.done:
		t.Fatalf("%s archived before it was idle", k)
	default:
	}

	advance(20 * time.Minute)
	// One session speaks again: it is not idle.
	wait(t, must(env.g.Submit(t.Context(), inbound("busy", "still here"))))
	env.g.compactIdle()
	if k := <-fc.done; k != "test:quiet" {
		t.Errorf("archived %s, want test:quiet", k)
	}
	env.g.compactIdle() // nothing left to archive in quiet
	if err := env.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(fc.done) != 0 {
		t.Errorf("archived again: %v", <-fc.done)
	}
}

func TestStatusReportsTheConversation(t *testing.T) {
	fc := &fakeConsolidator{done: make(chan string, 1)}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(_ *Config, d *Deps) {
			d.Consolidator = fc
			d.Usage = func() map[string]llm.Usage {
				return map[string]llm.Usage{"chat": {PromptTokens: 1500, CompletionTokens: 20, Calls: 2}}
			}
		})
	wait(t, must(env.g.Submit(t.Context(), inbound("st", "hello"))))
	r := wait(t, must(env.g.Submit(t.Context(), inbound("st", "/status"))))
	for _, want := range []string{"Model: test-model", "2 messages, 0 archived", "of 6.1k usable", "Tokens used: 1.5k in, 20 out in 2 calls", "Dream: off"} {
		if !strings.Contains(r.Reply, want) {
			t.Errorf("/status lacks %q:\n%s", want, r.Reply)
		}
	}
}

func TestQuietArchivedSessionsLeaveMemory(t *testing.T) {
	env, fc, advance := newIdleEnv(t)
	wait(t, must(env.g.Submit(t.Context(), inbound("old", "hello"))))
	advance(20 * time.Minute)
	env.g.compactIdle()
	<-fc.done
	waitWorkerIdle(t, env.g, "test:old")
	env.g.evictIdle() // archived, but quiet for only 20 minutes
	if n := len(env.sessions.Loaded()); n != 1 {
		t.Fatalf("evicted too early: %d loaded", n)
	}
	advance(2 * time.Hour)
	env.g.evictIdle()
	if n := len(env.sessions.Loaded()); n != 0 {
		t.Fatalf("a quiet archived session stayed in memory: %d loaded", n)
	}
	// It comes back from disk with everything it had.
	s, err := env.sessions.Get("test:old")
	if err != nil || s.Len() != 2 || s.LastConsolidated() != 2 {
		t.Errorf("reloaded: len %d lc %d err %v", s.Len(), s.LastConsolidated(), err)
	}
}

// waitWorkerIdle waits until the session's worker has finished its job: the
// fake consolidator reports before the job returns, and a busy session is
// rightly never evicted.
func waitWorkerIdle(t *testing.T, g *Gateway, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.queued(key) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("worker for %s still busy after 10s", key)
		}
		time.Sleep(time.Millisecond)
	}
}
