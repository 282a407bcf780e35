package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func TestChatOneShotWithATool(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmtest.ToolCall("read_file", `{"path":"USER.md"}`), llmtest.Text("I know nothing about you yet."))
	r := h.run("chat", "-m", "What do you know about me?")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := strings.TrimSpace(r.stdout); got != "I know nothing about you yet." {
		t.Errorf("stdout = %q", got)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	var callID string
	for _, m := range reqs[1].Messages {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 1 {
			callID = m.ToolCalls[0].ID
		}
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if callID == "" || last.Role != llm.RoleTool || last.ToolCallID != callID {
		t.Errorf("second request does not answer tool call %q: last message %+v", callID, last)
	}
	if !strings.Contains(last.Content, "# Users") {
		t.Errorf("tool result is not USER.md: %.100q", last.Content)
	}
	for _, req := range reqs {
		if err := req.CheckToolPairs(); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.ws, "AGENTS.md")); err != nil {
		t.Errorf("the first run should create the workspace: %v", err)
	}
}

func TestSessionSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmtest.Text("Nice to meet you, Ada."), llmtest.Text("Your name is Ada."))
	if r := h.run("chat", "--session", "work", "-m", "My name is Ada."); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("chat", "--session", "work", "-m", "What is my name?"); r.code != 0 {
		t.Fatalf("second run: exit %d: %s", r.code, r.stderr)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	var seen []string
	for _, m := range reqs[1].Messages[1:] {
		seen = append(seen, m.Role+": "+llmtest.Spoken(m.Content))
	}
	want := []string{"user: My name is Ada.", "assistant: Nice to meet you, Ada.", "user: What is my name?"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("second request carries %q, want %q", seen, want)
	}
	// Another session name is another conversation.
	h.llm.Push(llmtest.Text("Hello."))
	h.run("chat", "--session", "other", "-m", "hi")
	if n := len(h.llm.Requests()[2].Messages); n != 2 {
		t.Errorf("a fresh session should send system + 1 message, sent %d", n)
	}
}

func TestChatFaults(t *testing.T) {
	tests := []struct {
		name     string
		replies  []llmtest.Reply
		down     bool
		wantCode int
		wantOut  string
		requests int
		minWait  time.Duration
	}{
		{name: "429 then success", replies: []llmtest.Reply{llmtest.Status(429, "1"), llmtest.Text("ok")},
			wantCode: 0, wantOut: "ok", requests: 2, minWait: time.Second},
		{name: "400 is not retried", replies: []llmtest.Reply{llmtest.Status(400, "")}, wantCode: 1, requests: 1},
		{name: "malformed body", replies: []llmtest.Reply{llmtest.Malformed()}, wantCode: 1, requests: 1},
		{name: "endpoint down", down: true, wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.llm.Push(tt.replies...)
			if tt.down {
				h.set("llm.baseURL", closedURL(t))
			}
			r := h.run("chat", "-m", "hello")
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if tt.wantCode == 0 {
				if strings.TrimSpace(r.stdout) != tt.wantOut {
					t.Errorf("stdout = %q", r.stdout)
				}
			} else {
				oneSentence(t, r.stderr)
				if r.stdout != "" {
					t.Errorf("nothing should reach stdout on failure, got %q", r.stdout)
				}
			}
			if !tt.down && len(h.llm.Requests()) != tt.requests {
				t.Errorf("model got %d requests, want %d", len(h.llm.Requests()), tt.requests)
			}
			if r.elapsed < tt.minWait {
				t.Errorf("took %v, want at least %v (Retry-After)", r.elapsed, tt.minWait)
			}
		})
	}
}

func TestInvalidConfigNamesTheFieldAndExits2(t *testing.T) {
	tests := []struct {
		name, body, field string
	}{
		{"wrong type", `{"llm": {"contextWindow": "big"}}`, "llm.contextWindow"},
		{"bad value", `{"agent": {"targetRatio": 0.9}}`, "agent.targetRatio"},
		{"tiny conversation budget", `{"agent": {"conversationTokens": 500}}`, "agent.conversationTokens"},
		{"unknown key", `{"llm": {"modle": "x"}}`, "modle"},
		{"bad cron", `{"dream": {"cron": "every day"}}`, "dream.cron"},
		{"broken JSON", "{\n  \"llm\": {,\n}", "line 2"},
		// Only the gateway, which runs the channels, needs their tokens.
		{"slack without tokens, for the gateway", `{"channels": {"slack": {"enabled": true}}}`, "channels.slack.botToken"},
		{"slack send retry of 0", `{"channels": {"slack": {"enabled": true, "botToken": "xoxb-1", "appToken": "xapp-1", "sendRetryMinutes": 0}}}`, "channels.slack.sendRetryMinutes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if err := os.WriteFile(h.cfgPath, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"chat", "-m", "hi"}
			if strings.HasSuffix(tt.name, "for the gateway") {
				args = []string{"gateway"}
			}
			r := h.run(args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr: %s", r.code, r.stderr)
			}
			oneSentence(t, r.stderr)
			if !strings.Contains(r.stderr, tt.field) || !strings.Contains(r.stderr, h.cfgPath) {
				t.Errorf("stderr should name %q and the file: %s", tt.field, r.stderr)
			}
			if len(h.llm.Requests()) != 0 {
				t.Error("no model call with an invalid config")
			}
		})
	}
}
