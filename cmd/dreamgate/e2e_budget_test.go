package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A fact said 150 turns earlier in the same conversation is still
// answerable once the conversation budget (the default, on a 128K model)
// has archived it out of the live conversation: the next prompt carries it
// in the Recent history until Dream folds it into the memory files, and
// after Dream the model answers it from there.
func TestFactAnswerableAfterTheBudgetArchivedIt(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	const fact = "The code word for the vault is heron-lantern."
	lines := []string{fact}
	rng := rand.New(rand.NewPCG(21, 100))
	for i := 0; len(lines) < 151; i++ {
		if i%10 != 9 { // small talk only: scriptLine plants facts at 9
			lines = append(lines, scriptLine(rng, i)+" "+scriptLine(rng, i))
		}
	}
	cmd := exec.Command(binPath, "--config", h.cfgPath, "chat", "--session", "vault")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v\n%s", err, errb.String())
	}

	// A turn's first call (a question the memory shown does not answer
	// whole is followed by a recall call).
	var chats []llmtest.Request
	for _, r := range h.llm.Requests() {
		if !isArchiveCall(r) && r.Messages[len(r.Messages)-1].Role == "user" {
			chats = append(chats, r)
		}
	}
	if len(chats) != len(lines) {
		t.Fatalf("%d chat calls for %d lines", len(chats), len(lines))
	}
	var archivedAt int // the first turn whose prompt no longer replays the fact
	for i, r := range chats {
		if !strings.Contains(r.Messages[1].Content, fact) {
			archivedAt = i
			break
		}
	}
	if archivedAt == 0 {
		t.Fatal("the conversation budget never archived the fact's turn")
	}
	last := chats[len(chats)-1]
	for _, m := range last.Messages[1:] {
		if strings.Contains(m.Content, fact) {
			t.Fatalf("the last prompt still replays the fact's message")
		}
	}
	if sys := last.Messages[0].Content; !strings.Contains(sys, "# Recent history") || !strings.Contains(sys, "- "+fact) {
		t.Errorf("the last prompt lacks the fact in its Recent history:\n%s", sys)
	}
	var inHistory bool
	for _, e := range readHistory(t, h.ws) {
		inHistory = inHistory || (e.SessionKey == "terminal:vault" && strings.Contains(e.Content, fact))
	}
	if !inHistory {
		t.Error("history.jsonl has no entry of this conversation with the fact")
	}
	t.Logf("archived out of the prompt at turn %d; largest chat prompt %d tokens", archivedAt, largestPrompt(chats))

	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: exit %d: %s", r.code, r.stderr)
	}
	if mem := readMemoryFile(t, h.ws, "memory/MEMORY.md"); !strings.Contains(string(mem), fact) {
		t.Fatalf("MEMORY.md after Dream lacks the fact:\n%s", mem)
	}
	r := h.run("chat", "--session", "vault", "-m", "What is the code word for the vault?")
	if r.code != 0 || !strings.Contains(r.stdout, "heron-lantern") {
		t.Errorf("the question 150 turns later: exit %d, answer %q", r.code, r.stdout)
	}
}

func largestPrompt(reqs []llmtest.Request) int {
	n := 0
	for _, r := range reqs {
		n = max(n, r.PromptTokens)
	}
	return n
}
