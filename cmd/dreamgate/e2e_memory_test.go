package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// historyLine is a history.jsonl line, with dreamgate's source fields.
type historyLine struct {
	Cursor     int    `json:"cursor"`
	Timestamp  string `json:"timestamp"`
	Content    string `json:"content"`
	SessionKey string `json:"session_key"`
	SessionID  string `json:"session_id"`
	Range      []int  `json:"range"`
}

func readHistory(t *testing.T, ws string) []historyLine {
	t.Helper()
	if lines, ok := readHistoryFromDatabase(t, ws); ok {
		return lines
	}
	f, err := os.Open(filepath.Join(ws, "memory", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []historyLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var h historyLine
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		out = append(out, h)
	}
	return out
}

// isArchiveCall tells the consolidator's calls from chat turns: chat turns
// offer tools, archive calls never do.
func isArchiveCall(r llmtest.Request) bool { return len(r.Tools) == 0 }

// scriptedMemoryModel answers archive calls with numbered facts and chat
// turns with a tool call on every third user message, then text.
type scriptedMemoryModel struct {
	mu       sync.Mutex
	archives []string
}

func (m *scriptedMemoryModel) respond(r llmtest.Request) llmtest.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	if isArchiveCall(r) {
		fact := fmt.Sprintf("- archived fact %d: the user is planning a trip", len(m.archives)+1)
		m.archives = append(m.archives, fact)
		return llmtest.Text(fact)
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role == llm.RoleUser && strings.Contains(last.Content, "check your soul") {
		return llmtest.ToolCall("read_file", `{"path":"SOUL.md"}`)
	}
	return llmtest.Text("Noted. " + strings.Repeat("Here is a thoughtful, long answer. ", 20))
}

func TestLongConversationIsArchivedAndRecalled(t *testing.T) {
	h := newHarness(t)
	h.set("llm.contextWindow", 4096)
	h.set("llm.maxTokens", 256)
	model := &scriptedMemoryModel{}
	h.llm.SetResponder(model.respond)

	for i := range 12 {
		msg := fmt.Sprintf("Turn %d: %s", i, strings.Repeat("I am telling you about my trip plans in detail. ", 12))
		if i%3 == 1 {
			msg += " Please check your soul file."
		}
		if r := h.run("chat", "--session", "long", "-m", msg); r.code != 0 {
			t.Fatalf("turn %d: exit %d: %s", i, r.code, r.stderr)
		}
	}

	hist := readHistory(t, h.ws)
	if len(hist) < 2 {
		t.Fatalf("expected several archive entries, got %d", len(hist))
	}
	model.mu.Lock()
	archives := append([]string(nil), model.archives...)
	model.mu.Unlock()
	for i, e := range hist {
		if e.Cursor != i+1 {
			t.Errorf("entry %d has cursor %d, want %d", i, e.Cursor, i+1)
		}
		if e.SessionKey != "terminal:long" {
			t.Errorf("entry %d session_key = %q", i, e.SessionKey)
		}
		if i < len(archives) && e.Content != archives[i] {
			t.Errorf("entry %d content = %q, want the model's archive answer %q", i, e.Content, archives[i])
		}
	}

	var sawToolEvidence bool
	var lastChat llmtest.Request
	for _, r := range h.llm.Requests() {
		if isArchiveCall(r) {
			if strings.Contains(r.Messages[len(r.Messages)-1].Content, "TOOL read_file") &&
				strings.Contains(r.Messages[len(r.Messages)-1].Content, "# Soul") {
				sawToolEvidence = true
			}
			continue
		}
		lastChat = r
	}
	if !sawToolEvidence {
		t.Error("no archive request contained the read_file tool result of an archived turn")
	}
	// The next prompt carries the archived facts as Recent history.
	h.run("chat", "--session", "long", "-m", "What do you remember?")
	reqs := h.llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !isArchiveCall(reqs[i]) {
			lastChat = reqs[i]
			break
		}
	}
	sys := lastChat.Messages[0].Content
	if !strings.Contains(sys, "# Recent history") || !strings.Contains(sys, hist[0].Content) {
		t.Errorf("the next prompt does not carry the archive as Recent history:\n%s", sys)
	}
}

func TestNewArchivesBeforeTheProcessExits(t *testing.T) {
	h := newHarness(t)
	model := &scriptedMemoryModel{}
	h.llm.SetResponder(model.respond)
	h.run("chat", "--session", "s", "-m", "My favourite tea is sencha.")
	if got := readHistory(t, h.ws); len(got) != 0 {
		t.Fatalf("a short chat should not be archived yet: %+v", got)
	}
	r := h.run("chat", "--session", "s", "-m", "/new")
	if r.code != 0 || !strings.Contains(r.stdout, "New conversation started") {
		t.Fatalf("/new: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	got := readHistory(t, h.ws)
	if len(got) != 1 || got[0].SessionKey != "terminal:s" || !strings.Contains(got[0].Content, "archived fact") {
		t.Fatalf("after the one-shot /new exited, history = %+v", got)
	}
	// The new conversation starts empty.
	h.run("chat", "--session", "s", "-m", "hello again")
	reqs := h.llm.Requests()
	last := reqs[len(reqs)-1]
	if n := len(last.Messages); n != 2 {
		t.Errorf("the conversation after /new sent %d messages, want system + 1", n)
	}
}
