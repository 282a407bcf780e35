package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
)

// TestSystemPromptLayout pins the system prompt byte for byte: the fixed
// prefix (identity, then the workspace files in order), the session's
// Recent history and last archive summary, then the runtime tail. The
// prefix comes first and stays put between turns, for prompt caches.
func TestSystemPromptLayout(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(_ *Config, d *Deps) { d.Now = func() time.Time { return now } })
	write := func(rel, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(env.ws, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", "Be brief.\n")
	write("SOUL.md", "\nCalm and exact.\n")
	write("USER.md", "Ana runs the release.\n")
	write("memory/MEMORY.md", "The staging host is blue.\n")
	useRealConsolidator(t, env, 128000, 4096)
	store := openHistory(t, env)
	if _, err := store.Append("- Ana prefers tea", "test:layout"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append("- another chat's fact", "test:other"); err != nil {
		t.Fatal(err)
	}
	entries, err := store.Since(0, 0)
	if err != nil || len(entries) != 2 {
		t.Fatal(entries, err)
	}
	sess, err := env.sessions.Get("test:layout")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.SetLastConsolidated(0, "- the last summary"); err != nil {
		t.Fatal(err)
	}

	prefix := identity +
		"\n\n# Instructions (AGENTS.md)\n\nBe brief." +
		"\n\n# Soul (SOUL.md)\n\nCalm and exact." +
		"\n\n# Users (USER.md)\n\nAna runs the release." +
		"\n\n# Long-term memory (memory/MEMORY.md)\n\nThe staging host is blue."
	history := "\n\n# Recent history\n\nNotes archived from earlier exchanges in this chat, not yet folded into long-term memory:\n\n" +
		"- [" + entries[0].Timestamp + "] - Ana prefers tea" +
		"\n\n# Last archive summary of this conversation\n\n- the last summary"
	tail := "\n\n# Now\n\nTime: Tuesday 2026-11-24 09:30 UTC. Channel: test. Conversation: test:layout. Sender: alice (U1)."

	for i, text := range []string{"first", "second"} {
		r := wait(t, must(env.g.Submit(t.Context(), inbound("layout", text))))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		reqs := env.model.Requests()
		sys := reqs[len(reqs)-1].Messages[0]
		if sys.Role != llm.RoleSystem {
			t.Fatalf("turn %d: first message is %s", i, sys.Role)
		}
		if want := prefix + history + tail; sys.Content != want {
			t.Errorf("turn %d: system prompt\n%s\nwant\n%s", i, sys.Content, want)
		}
	}

	// A summary already shown in the Recent history is not repeated.
	if err := sess.SetLastConsolidated(sess.LastConsolidated(), "- Ana prefers tea"); err != nil {
		t.Fatal(err)
	}
	wait(t, must(env.g.Submit(t.Context(), inbound("layout", "third"))))
	reqs := env.model.Requests()
	if got := reqs[len(reqs)-1].Messages[0].Content; strings.Contains(got, "# Last archive summary") ||
		!strings.HasPrefix(got, prefix+"\n\n# Recent history\n\n") || !strings.HasSuffix(got, "- Ana prefers tea"+tail) {
		t.Errorf("summary inside the Recent history repeated or moved:\n%s", got)
	}
}

// useRealConsolidator wires env's gateway with a consolidator over the
// workspace's history.jsonl and the given budget.
func useRealConsolidator(t testing.TB, env *testEnv, window, maxTokens int) *consolidator.Consolidator {
	t.Helper()
	cons := consolidator.New(env.model, openHistory(t, env), consolidator.Config{ContextWindow: window, MaxTokens: maxTokens}, nil)
	env.g.deps.Consolidator = cons
	return cons
}

// openHistory opens the workspace's history store (several stores on one
// file are fine: they share the file lock, and each re-reads what changed).
func openHistory(t testing.TB, env *testEnv) *history.Store {
	t.Helper()
	store, err := history.Open(filepath.Join(env.ws, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}
