package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

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
