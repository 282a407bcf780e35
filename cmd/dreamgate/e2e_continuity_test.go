package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// A conversation archived by budget, one `chat --session` process per
// turn: every prompt still carries the last messages of the conversation
// (at least 8, from a user turn on), tool calls still paired with their
// results, and no turn is archived twice.
func TestArchivedConversationKeepsItsLastMessages(t *testing.T) {
	h := newHarness(t)
	h.set("llm.contextWindow", 6000)
	h.set("llm.maxTokens", 256)
	model := &scriptedMemoryModel{}
	h.llm.SetResponder(model.respond)

	const turns = 16
	for i := range turns {
		msg := fmt.Sprintf("Turn %02d: %s", i, strings.Repeat("I am telling you about my trip plans in detail. ", 12))
		if i%3 == 1 {
			msg += " Please check your soul file."
		}
		if r := h.run("chat", "--session", "cont", "-m", msg); r.code != 0 {
			t.Fatalf("turn %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	if hist := readHistory(t, h.ws); len(hist) < 2 {
		t.Fatalf("fixture: %d archive entries, want several", len(hist))
	}

	turn := -1
	archived := map[string]int{}
	for _, r := range h.llm.Requests() {
		if err := r.CheckToolPairs(); err != nil {
			t.Error(err)
		}
		if isArchiveCall(r) {
			text := r.Messages[len(r.Messages)-1].Content
			for i := range turns {
				if strings.Contains(text, fmt.Sprintf("Turn %02d:", i)) {
					archived[fmt.Sprint(i)]++
				}
			}
			continue
		}
		last := r.Messages[len(r.Messages)-1]
		if last.Role != llm.RoleUser {
			continue // the second call of a turn with a tool call
		}
		turn++
		// The turns before this one, and this one's user message.
		var users int
		for _, m := range r.Messages[1:] {
			if m.Role == llm.RoleUser {
				users++
			}
		}
		if r.Messages[1].Role != llm.RoleUser {
			t.Errorf("turn %d: the replay starts with %s", turn, r.Messages[1].Role)
		}
		// The last 8 messages, extended back to a user message, span this
		// user message and at least 3 turns before it: a turn is 2
		// messages, 4 with a tool call, and no two tool turns are adjacent.
		if want := min(turn+1, 4); users < want {
			t.Errorf("turn %d: the prompt carries %d user messages, want at least %d", turn, users, want)
		}
	}
	if turn != turns-1 {
		t.Fatalf("saw %d chat turns, want %d", turn+1, turns)
	}
	if len(archived) == 0 {
		t.Fatal("no archive transcript named a turn")
	}
	for k, n := range archived {
		if n != 1 {
			t.Errorf("turn %s archived %d times", k, n)
		}
	}
}
