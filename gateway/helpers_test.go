package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

func textReply(s string) llm.Response {
	return llm.Response{Content: s, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}
}

// recorder is a channel that records what the gateway sends.
type recorder struct {
	name string
	mu   sync.Mutex
	sent []channels.Outbound
	got  chan channels.Outbound
}

func newRecorder(name string) *recorder {
	return &recorder{name: name, got: make(chan channels.Outbound, 4096)}
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Run(ctx context.Context, _ channels.Sink) error {
	<-ctx.Done()
	return nil
}
func (r *recorder) Send(_ context.Context, out channels.Outbound) error {
	r.mu.Lock()
	r.sent = append(r.sent, out)
	r.mu.Unlock()
	r.got <- out
	return nil
}

func (r *recorder) next(t testing.TB) channels.Outbound {
	t.Helper()
	select {
	case o := <-r.got:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no outbound message within 10s")
		return channels.Outbound{}
	}
}

type testEnv struct {
	g        *Gateway
	ch       *recorder
	model    *llmtest.Model
	sessions *session.Store
	ws       string
}

func newTestEnv(t testing.TB, f func(ctx context.Context, req llm.Request) (llm.Response, error), mod func(*Config, *Deps)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	if _, err := workspacetemplate.Install(ws); err != nil {
		t.Fatal(err)
	}
	sessions, err := session.NewStore(filepath.Join(dir, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	aw, err := workspace.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aw.Close(); sessions.Close() })
	model := llmtest.NewModel(t).Then(f)
	cfg := Config{Workspace: ws, ModelName: "test-model", MaxToolIterations: 5}
	deps := Deps{
		Model:    model,
		Sessions: sessions,
		Prompts:  NewPromptBuilder(ws, nil, nil),
		Tools:    agent.FileTools(aw, agent.ChatPolicy()),
	}
	if mod != nil {
		mod(&cfg, &deps)
	}
	g := New(cfg, deps)
	rec := newRecorder("test")
	g.AddChannel(rec)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return &testEnv{g: g, ch: rec, model: model, sessions: sessions, ws: ws}
}

// operator is the audience of inbound's messages: the default scope, as
// every conversation had before audiences.
var operator = audience.Audience{Kind: audience.Operator, Platform: "test"}

func inbound(session, text string) channels.Inbound {
	return channels.Inbound{
		Channel: "test", ChatID: session, SessionKey: "test:" + session,
		SenderID: "U1", SenderName: "alice", Audience: operator, Text: text, MessageID: fmt.Sprint(time.Now().UnixNano()),
	}
}

func wait(t testing.TB, done <-chan Result) Result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result within 10s")
		return Result{}
	}
}

// operatorView is what the operator's prompt shows: the default scope.
var operatorView = MemoryView{Audience: operator, Scopes: []audience.Scope{audience.Default}}
