package gateway

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// longConversation is n turns: a question, every third one answered after
// a tool call, then the answer.
func longConversation(n int) []llm.Message {
	var msgs []llm.Message
	for i := range n {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprint("question ", i)})
		if i%3 == 0 {
			id := fmt.Sprint("call", i)
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"x"}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "read_file", Content: fmt.Sprint("file ", i)})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint("answer ", i)})
	}
	return msgs
}

// A long, mostly archived session, loaded again from disk (from its tail
// mark), gives the next turn the same prompt as the session that stayed in
// memory: the unarchived messages and the continuity window before them.
func TestLongSessionPromptSurvivesARestart(t *testing.T) {
	prompt := func(restart bool) []string {
		env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
			return textReply("ok"), nil
		}, nil)
		useRealConsolidator(t, env, 128000, 4096)
		sess, err := env.sessions.Get("test:long")
		if err != nil {
			t.Fatal(err)
		}
		msgs := longConversation(400)
		if err := sess.Append(msgs...); err != nil {
			t.Fatal(err)
		}
		// Three unarchived messages: the window reaches back before them.
		if err := sess.SetLastConsolidated(len(msgs)-3, "- earlier"); err != nil {
			t.Fatal(err)
		}
		if restart {
			if !env.sessions.Evict(sess) {
				t.Fatal("not evicted")
			}
			again, err := env.sessions.Get("test:long")
			if err != nil {
				t.Fatal(err)
			}
			if base, _ := again.Tail(); base == 0 || again.Len() != len(msgs) {
				t.Fatalf("reloaded: base %d, len %d", base, again.Len())
			}
		}
		if r := wait(t, must(env.g.Submit(t.Context(), inbound("long", "and now?")))); r.Err != nil {
			t.Fatal(r.Err)
		}
		reqs := chatRequests(env)
		return contents(reqs[len(reqs)-1].Messages[1:])
	}
	stayed, reloaded := prompt(false), prompt(true)
	if len(stayed) < 8 {
		t.Fatalf("fixture: the prompt replays %d messages, want the continuity window too:\n%q", len(stayed), stayed)
	}
	if !slices.Equal(stayed, reloaded) {
		t.Errorf("after a restart the turn replayed\n%q\nwithout one\n%q", reloaded, stayed)
	}
}
