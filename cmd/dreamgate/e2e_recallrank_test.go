package main

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// Issue 28, point 11: recall ranked the assistant's own "I found …"
// answers above what a person said. Through the binary: a fact is said and
// archived, asked for (the model finds it with the recall tool and
// answers "I found: …"), and asked for again once that answer is
// archived too: the second search lists the person's words before the
// assistant's answer quoting them.
func TestRecallRanksWhatPeopleSaidAboveItsAnswersThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	const said, question = "My locker combination is LOCKER4417.", "What is my locker combination?"
	for _, msg := range []string{said, "/new", question, "/new"} {
		if r := h.run("chat", "-m", msg); r.code != 0 {
			t.Fatalf("chat %q: exit %d: %s", msg, r.code, r.stderr)
		}
	}
	n := len(h.llm.Requests())
	if r := h.run("chat", "-m", question); r.code != 0 || !strings.Contains(r.stdout, "LOCKER4417") {
		t.Fatalf("the question again: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var result string
	for _, r := range h.llm.Requests()[n:] {
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool && strings.Contains(m.Content, "LOCKER4417") {
				result = m.Content
			}
		}
	}
	if result == "" {
		t.Fatal("the model did not search with the recall tool")
	}
	person, answer := -1, -1
	for i, line := range strings.Split(result, "\n") {
		switch {
		case answer < 0 && strings.Contains(line, "assistant in conversation") && strings.Contains(line, "I found"):
			answer = i
		case person < 0 && strings.Contains(line, " in conversation ") && strings.Contains(line, said):
			person = i
		}
	}
	if person < 0 || answer < 0 {
		t.Fatalf("the search does not list both the person's words and the answer quoting them:\n%s", result)
	}
	if answer < person {
		t.Errorf("the assistant's answer ranks above what the person said:\n%s", result)
	}
}
