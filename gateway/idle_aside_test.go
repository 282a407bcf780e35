package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

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
