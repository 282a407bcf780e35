package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
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
	status := inbound("st", "/status")
	status.Local = true // the operator reads the gateway's tokens
	r := wait(t, must(env.g.Submit(t.Context(), status)))
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

// writeOldSession writes a conversation as a previous process would have
// left it: messages at when, the first archived ones recorded.
func writeOldSession(t *testing.T, dir, key string, when time.Time, archived int, texts ...string) {
	t.Helper()
	st, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.SetClock(func() time.Time { return when })
	s, err := st.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		if err := s.Append(llm.Message{Role: role, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if archived > 0 {
		if err := s.SetLastConsolidated(archived, "- earlier"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// A conversation a previous process left with an unarchived tail is
// archived by a new gateway on start; one fully archived or not yet quiet
// is left alone.
func TestSessionsOnDiskAreArchivedOnStart(t *testing.T) {
	start := time.Now().Add(time.Hour) // the new gateway's clock
	fc := &fakeConsolidator{done: make(chan string, 16)}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(c *Config, d *Deps) {
			c.IdleCompactAfter = 15 * time.Minute
			d.Consolidator = fc
			d.Now = func() time.Time { return start }
		})
	dir := filepath.Join(filepath.Dir(env.ws), "sessions")
	old := start.Add(-time.Hour)
	writeOldSession(t, dir, "terminal:cli", old, 0, "my locker is 42", "noted")
	writeOldSession(t, dir, "slack:C1", old, 2, "hi", "hello")
	writeOldSession(t, dir, "slack:C2", start.Add(-time.Minute), 0, "still talking", "ok")
	recent := start.Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "c2xhY2s6QzI.jsonl"), recent, recent); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = env.g.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	select {
	case k := <-fc.done:
		if k != "terminal:cli" {
			t.Errorf("archived %s, want terminal:cli", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session left on disk was not archived on start")
	}
	waitWorkerIdle(t, env.g, "terminal:cli")
	s, err := env.sessions.Get("terminal:cli")
	if err != nil || s.LastConsolidated() != 2 {
		t.Errorf("terminal:cli after the archive: lc %d, err %v", s.LastConsolidated(), err)
	}
	// A second pass finds nothing more to do.
	env.g.compactOnDisk(map[string]time.Time{})
	waitWorkerIdle(t, env.g, "slack:C1")
	waitWorkerIdle(t, env.g, "slack:C2")
	if len(fc.done) != 0 {
		t.Errorf("archived more: %s", <-fc.done)
	}
}

// One pass loads a bounded number of conversations, and a conversation
// once looked at is not loaded again until its file changes.
func TestDiskPassIsBounded(t *testing.T) {
	start := time.Now().Add(time.Hour)
	fc := &fakeConsolidator{done: make(chan string, 16)}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(c *Config, d *Deps) {
			c.IdleCompactAfter = 15 * time.Minute
			d.Consolidator = fc
			d.Now = func() time.Time { return start }
		})
	dir := filepath.Join(filepath.Dir(env.ws), "sessions")
	var keys []string
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		keys = append(keys, "terminal:"+k)
		writeOldSession(t, dir, "terminal:"+k, start.Add(-time.Hour), 0, "fact "+k)
	}
	checked := map[string]time.Time{}
	pass := func() []string {
		env.g.compactOnDisk(checked)
		var got []string
		for _, k := range keys {
			waitWorkerIdle(t, env.g, k)
		}
		for len(fc.done) > 0 {
			got = append(got, <-fc.done)
		}
		slices.Sort(got)
		return got
	}
	first := pass()
	if len(first) != diskLoadsPerPass {
		t.Fatalf("first pass archived %v, want %d sessions", first, diskLoadsPerPass)
	}
	second := pass()
	if len(second) != len(keys)-diskLoadsPerPass || len(slices.Concat(first, second)) != len(keys) {
		t.Errorf("second pass archived %v after %v", second, first)
	}
	for _, k := range second {
		if slices.Contains(first, k) {
			t.Errorf("%s archived twice", k)
		}
	}
	if third := pass(); len(third) != 0 {
		t.Errorf("third pass archived %v", third)
	}
}

// A conversation /new set aside whose archive never finished (the process
// was killed) is archived by a new gateway on start, once, into its own
// set-aside metadata; it does not become the live conversation again.
func TestSetAsideSessionIsArchivedOnStart(t *testing.T) {
	fc := &fakeConsolidator{done: make(chan string, 16)}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(c *Config, d *Deps) {
			c.IdleCompactAfter = 15 * time.Minute
			d.Consolidator = fc
		})
	dir := filepath.Join(filepath.Dir(env.ws), "sessions")

	// The previous process: a conversation, /new, one more message, killed
	// before the archive of the old one ran (nothing archived, no metadata).
	prev, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := prev.Get("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "remember X=1"}, llm.Message{Role: llm.RoleAssistant, Content: "noted"}); err != nil {
		t.Fatal(err)
	}
	old, fresh, err := prev.Rotate("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	oldID := old.ID()
	if err := fresh.Append(llm.Message{Role: llm.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := prev.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = env.g.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	select {
	case k := <-fc.done:
		if k != "terminal:default" {
			t.Errorf("archived %s, want terminal:default", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the set-aside conversation was not archived on start")
	}
	waitWorkerIdle(t, env.g, "terminal:default")

	// Its progress is in its own metadata, under the ID its file is named by.
	raw, err := os.ReadFile(filepath.Join(dir, "dGVybWluYWw6ZGVmYXVsdA."+oldID+".meta.json"))
	if err != nil {
		t.Fatalf("set-aside metadata: %v", err)
	}
	var m struct {
		ID               string `json:"id"`
		LastConsolidated int    `json:"last_consolidated"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ID != oldID || m.LastConsolidated != 2 {
		t.Errorf("set-aside metadata %s (err %v), want id %s, last_consolidated 2", raw, err, oldID)
	}
	// The live conversation is still the new one, untouched.
	live, err := env.sessions.Get("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := live.Messages(); len(msgs) != 1 || msgs[0].Content != "hi" || live.LastConsolidated() != 0 {
		t.Errorf("live conversation %v lc %d, want [hi] unarchived", msgs, live.LastConsolidated())
	}
	if _, err := os.Stat(filepath.Join(dir, "dGVybWluYWw6ZGVmYXVsdA.meta.json")); !os.IsNotExist(err) {
		t.Errorf("the live conversation got metadata: %v", err)
	}

	// A later scan, as a restarted process makes it, archives nothing more.
	env.g.archiveSetAside(&seenSet{m: map[string]bool{}})
	waitWorkerIdle(t, env.g, "terminal:default")
	env.g.backgroundWG.Wait()
	if len(fc.done) != 0 {
		t.Errorf("archived again: %s", <-fc.done)
	}
}
