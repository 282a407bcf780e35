package consolidator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// step is one scripted model answer.
type step struct {
	resp llm.Response
	err  error
	// wait, when set, is called before answering (with the call's context);
	// a non-nil error it returns is the call's error.
	wait func(ctx context.Context) error
}

// chat answers as s says; an answer without usage gets one estimated from
// the transcript, as a provider reports it.
func (s step) chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if s.wait != nil {
		if err := s.wait(ctx); err != nil {
			return llm.Response{}, err
		}
	}
	if s.resp.Usage == (llm.Usage{}) && s.err == nil {
		s.resp.Usage = llm.Usage{PromptTokens: len(req.Messages[1].Content) / 4, CompletionTokens: len(s.resp.Content) / 4, Calls: 1}
	}
	return s.resp, s.err
}

// newFakeModel answers archive calls from script; past its end it answers
// with a one-line summary. It records every request.
func newFakeModel(t testing.TB, script ...step) *llmtest.Model {
	m := llmtest.NewModel(t)
	for _, s := range script {
		m.Push(s.chat)
	}
	return m.Then(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		s := step{resp: llm.Response{Content: fmt.Sprintf("- summary %d", len(m.Requests())), FinishReason: llm.FinishStop}}
		return s.chat(ctx, req)
	})
}

// transcripts returns the user message of every archive request.
func transcripts(m *llmtest.Model) []string {
	var out []string
	for _, r := range m.Requests() {
		out = append(out, r.Messages[len(r.Messages)-1].Content)
	}
	return out
}

// fakeSession is an in-memory Session.
type fakeSession struct {
	mu      sync.Mutex
	key, id string
	msgs    []llm.Message
	lc      int
	summary string
	setErr  error
	sets    []int // every n passed to SetLastConsolidated
	saveErr error
	saves   int // SaveID calls
	// base is where Tail starts: the messages before it are not held
	// (as a long session's archived ones are not). 0 unless a test sets
	// it; SetLastConsolidated then keeps it keepBefore behind.
	base       int
	keepBefore int
	// aud is the conversation's audience; zero means the operator's.
	aud audience.Audience
}

func newSession(key string, msgs ...llm.Message) *fakeSession {
	return &fakeSession{key: key, id: key + "#1", msgs: msgs}
}

func (s *fakeSession) Key() string { return s.key }
func (s *fakeSession) Audience() audience.Audience {
	if s.aud.IsZero() {
		return audience.Audience{Kind: audience.Operator, Platform: "terminal"}
	}
	return s.aud
}
func (s *fakeSession) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}
func (s *fakeSession) Messages() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs[:len(s.msgs):len(s.msgs)]
}
func (s *fakeSession) Tail() (int, []llm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base, s.msgs[s.base:len(s.msgs):len(s.msgs)]
}
func (s *fakeSession) SaveID() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	return s.saveErr
}
func (s *fakeSession) LastConsolidated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lc
}
func (s *fakeSession) LastSummary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summary
}
func (s *fakeSession) SetLastConsolidated(n int, summary string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.setErr != nil {
		return s.setErr
	}
	if n < s.lc || n > len(s.msgs) {
		return fmt.Errorf("last_consolidated %d outside [%d, %d]", n, s.lc, len(s.msgs))
	}
	s.lc = n
	s.sets = append(s.sets, n)
	if s.keepBefore > 0 {
		// As the gateway's sessions do: from the user message at or
		// before n-keepBefore.
		for i := n - s.keepBefore; i > s.base; i-- {
			if s.msgs[i].Role == llm.RoleUser {
				s.base = i
				break
			}
		}
	}
	if summary != "" {
		s.summary = summary
	}
	return nil
}
func (s *fakeSession) append(msgs ...llm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
}

// words is text of exactly n cl100k tokens (" hello" is one token), after
// an optional marker.
func words(marker string, n int) string {
	if marker == "" {
		return strings.Repeat(" hello", n)
	}
	return marker + strings.Repeat(" hello", n)
}

var t0 = time.Date(2026, 4, 3, 0, 2, 0, 0, time.Local)

func user(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: text, Time: t0}
}

func assistant(text string, calls ...llm.ToolCall) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: calls, Time: t0}
}

func toolResult(id, name, text string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: name, Content: text, Time: t0}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// bytes is the byte upper bound of the unarchived messages.
func (s *fakeSession) bytes() int {
	n := 0
	for _, m := range s.Messages()[s.LastConsolidated():] {
		n += MessageUpperBound(m)
	}
	return n
}
