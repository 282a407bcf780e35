package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// echoTool returns its arguments, counts its runs, and can be told to fail.
type echoTool struct {
	name string
	runs int
	run  func(ctx context.Context, args json.RawMessage) (string, error)
}

func (e *echoTool) Def() llm.ToolDef {
	return llm.ToolDef{Name: e.name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (e *echoTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	e.runs++
	if e.run != nil {
		return e.run(ctx, args)
	}
	return e.name + " got " + string(args), nil
}

func input() []llm.Message {
	return []llm.Message{{Role: llm.RoleSystem, Content: "sys"}, {Role: llm.RoleUser, Content: "hi"}}
}

// runLoop runs l over the standard input and checks the invariants every run
// must keep whatever happened.
func runLoop(t *testing.T, ctx context.Context, l *Loop) (Result, error) {
	t.Helper()
	in := input()
	res, err := l.Run(ctx, in)
	if err := checkToolPairs(append(input(), res.Messages...)); err != nil {
		t.Errorf("Result.Messages are not a valid wire: %v", err)
	}
	if len(in) != 2 || in[1].Content != "hi" {
		t.Errorf("input messages were modified: %+v", in)
	}
	return res, err
}

func TestLoopTextReply(t *testing.T) {
	m := newScripted(t, reply("hello"))
	tool := &echoTool{name: "echo"}
	l := &Loop{Model: m, Tools: []Tool{tool}, ModelName: "m1", Purpose: llm.PurposeChat}
	res, err := runLoop(t, t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "hello" || res.Stop != StopCompleted || res.Iterations != 1 {
		t.Fatalf("got reply %q stop %s iterations %d", res.Reply, res.Stop, res.Iterations)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != llm.RoleAssistant || res.Messages[0].Content != "hello" {
		t.Fatalf("messages = %+v", res.Messages)
	}
	req := m.Requests()[0]
	if req.Model != "m1" || req.Purpose != llm.PurposeChat || len(req.Tools) != 1 || req.Tools[0].Name != "echo" {
		t.Fatalf("request = model %q purpose %q tools %+v", req.Model, req.Purpose, req.Tools)
	}
	if res.Usage.Calls != 1 || res.Usage.PromptTokens != 10 {
		t.Fatalf("usage = %+v", res.Usage)
	}
}

func TestLoopToolCallThenReply(t *testing.T) {
	m := newScripted(t,
		callTools(tc("call_1", "echo", `{"x":1}`)),
		reply("done"),
	)
	tool := &echoTool{name: "echo"}
	var progress []string
	l := &Loop{Model: m, Tools: []Tool{tool}, OnToolCall: func(name string) { progress = append(progress, name) }}
	res, err := runLoop(t, t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "done" || res.Stop != StopCompleted || res.Iterations != 2 || res.ToolCalls != 1 || res.ToolErrors != 0 {
		t.Fatalf("result = %+v", res)
	}
	second := m.Requests()[1].Messages
	last := second[len(second)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "call_1" || last.Name != "echo" || last.Content != `echo got {"x":1}` {
		t.Fatalf("tool result sent = %+v", last)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("want assistant call, tool result, reply; got %+v", res.Messages)
	}
	if strings.Join(progress, ",") != "echo" {
		t.Fatalf("OnToolCall saw %v", progress)
	}
	if res.Usage.Calls != 2 || res.Usage.CompletionTokens != 7 {
		t.Fatalf("usage = %+v", res.Usage)
	}
}

func TestLoopSeveralCallsAnsweredInOrder(t *testing.T) {
	m := newScripted(t,
		callTools(tc("a", "one", `{}`), tc("b", "two", `{}`), tc("c", "one", `{"n":2}`)),
		reply("ok"),
	)
	var order []string
	mk := func(name string) *echoTool {
		return &echoTool{name: name, run: func(_ context.Context, args json.RawMessage) (string, error) {
			order = append(order, name+string(args))
			return name + string(args), nil
		}}
	}
	l := &Loop{Model: m, Tools: []Tool{mk("one"), mk("two")}}
	res, err := runLoop(t, t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != `one{} two{} one{"n":2}` {
		t.Fatalf("run order = %s", got)
	}
	var ids []string
	for _, msg := range res.Messages[1:4] {
		ids = append(ids, msg.ToolCallID+"="+msg.Content)
	}
	if got := strings.Join(ids, " "); got != `a=one{} b=two{} c=one{"n":2}` {
		t.Fatalf("results = %s", got)
	}
}

func TestLoopToolFailuresGoBackToTheModel(t *testing.T) {
	failing := &echoTool{name: "fail", run: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("disk on fire")
	}}
	panicking := &echoTool{name: "boom", run: func(context.Context, json.RawMessage) (string, error) {
		panic("nil map somewhere")
	}}
	ok := &echoTool{name: "ok"}
	tests := []struct {
		name string
		call llm.ToolCall
		want string
	}{
		{"unknown tool", tc("1", "rm_rf", `{}`), `Error: unknown tool "rm_rf"; the tools are: fail, boom, ok.`},
		{"malformed arguments", tc("1", "ok", `{"path": "SOUL.md"`), "Error: the arguments of ok are not valid JSON; send one JSON object."},
		{"tool error", tc("1", "fail", `{}`), "Error: disk on fire"},
		{"panicking tool", tc("1", "boom", `{}`), "Error: boom failed with an internal error"},
		{"empty arguments mean none", tc("1", "ok", ``), "ok got {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newScripted(t,
				callTools(tt.call), reply("recovered"),
			)
			l := &Loop{Model: m, Tools: []Tool{failing, panicking, ok}}
			res, err := runLoop(t, t.Context(), l)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != StopCompleted || res.Reply != "recovered" {
				t.Fatalf("run did not go on: %+v", res)
			}
			if got := res.Messages[1].Content; got != tt.want {
				t.Fatalf("result = %q, want %q", got, tt.want)
			}
			wantErrors := 1
			if !strings.HasPrefix(tt.want, "Error:") {
				wantErrors = 0
			}
			if res.ToolErrors != wantErrors || res.ToolCalls != 1 {
				t.Fatalf("ToolCalls %d ToolErrors %d", res.ToolCalls, res.ToolErrors)
			}
		})
	}
}

func TestLoopDuplicateIDs(t *testing.T) {
	history := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc("call_0", "echo", `{}`)}},
		{Role: llm.RoleTool, ToolCallID: "call_0", Name: "echo", Content: "old"},
	}
	tests := []struct {
		name     string
		calls    []llm.ToolCall
		wantRuns int
		want     []string // result contents in order
	}{
		{"same id, same call: answered once, not run twice",
			[]llm.ToolCall{tc("x", "echo", `{"a":1}`), tc("x", "echo", `{"a":1}`)}, 1,
			[]string{`echo got {"a":1}`, "Error: not run: this call repeats call x of the same response."}},
		{"same id, different calls: both run",
			[]llm.ToolCall{tc("x", "echo", `{"a":1}`), tc("x", "echo", `{"a":2}`)}, 2,
			[]string{`echo got {"a":1}`, `echo got {"a":2}`}},
		{"id reused from an earlier turn",
			[]llm.ToolCall{tc("call_0", "echo", `{}`)}, 1, []string{`echo got {}`}},
		{"no id at all",
			[]llm.ToolCall{tc("", "echo", `{}`), tc("", "echo", `{"b":1}`)}, 2,
			[]string{`echo got {}`, `echo got {"b":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newScripted(t,
				callTools(tt.calls...), reply("ok"),
			)
			tool := &echoTool{name: "echo"}
			l := &Loop{Model: m, Tools: []Tool{tool}}
			in := append(input(), history...)
			res, err := l.Run(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkToolPairs(append(in, res.Messages...)); err != nil {
				t.Fatalf("invalid wire: %v", err)
			}
			if tool.runs != tt.wantRuns {
				t.Fatalf("tool ran %d times, want %d", tool.runs, tt.wantRuns)
			}
			for i, want := range tt.want {
				if got := res.Messages[1+i].Content; got != want {
					t.Errorf("result %d = %q, want %q", i, got, want)
				}
			}
			if res.ToolCalls != len(tt.calls) {
				t.Errorf("ToolCalls = %d", res.ToolCalls)
			}
		})
	}
}

func TestLoopMaxIterations(t *testing.T) {
	var steps []func(context.Context, llm.Request) (llm.Response, error)
	for i := range 5 {
		steps = append(steps, callTools(tc(fmt.Sprint("c", i), "echo", fmt.Sprintf(`{"i":%d}`, i))))
	}
	m := newScripted(t, steps...)
	l := &Loop{Model: m, Tools: []Tool{&echoTool{name: "echo"}}, MaxIterations: 3}
	res, err := runLoop(t, t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != StopMaxIterations || res.Iterations != 3 || len(m.Requests()) != 3 || res.ToolCalls != 3 || res.Reply != "" {
		t.Fatalf("result = %+v, model calls %d", res, len(m.Requests()))
	}
	if len(res.Messages) != 6 {
		t.Fatalf("want 3 calls and 3 results, got %d messages", len(res.Messages))
	}
}

func TestLoopMaxIterationsDefault(t *testing.T) {
	var steps []func(context.Context, llm.Request) (llm.Response, error)
	for i := range DefaultMaxIterations + 1 {
		steps = append(steps, callTools(tc(fmt.Sprint("c", i), "echo", fmt.Sprintf(`{"i":%d}`, i))))
	}
	m := newScripted(t, steps...)
	res, _ := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{&echoTool{name: "echo"}}})
	if res.Stop != StopMaxIterations || res.Iterations != DefaultMaxIterations {
		t.Fatalf("stop %s after %d iterations", res.Stop, res.Iterations)
	}
}

func TestLoopRepeatLimit(t *testing.T) {
	t.Run("same call, same outcome, three times ends the run", func(t *testing.T) {
		var steps []func(context.Context, llm.Request) (llm.Response, error)
		for i := range 5 {
			// Key order and spacing differ; the call is the same.
			a := `{"path":"MEMORY.md","old_text":"x"}`
			if i%2 == 1 {
				a = `{ "old_text": "x", "path": "MEMORY.md" }`
			}
			steps = append(steps, callTools(tc(fmt.Sprint("c", i), "fail", a)))
		}
		m := newScripted(t, steps...)
		tool := &echoTool{name: "fail", run: func(context.Context, json.RawMessage) (string, error) {
			return "", errors.New("old_text not found in MEMORY.md")
		}}
		res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{tool}, RepeatLimit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != StopRepeated || res.Iterations != 3 || tool.runs != 3 {
			t.Fatalf("stop %s iterations %d runs %d", res.Stop, res.Iterations, tool.runs)
		}
	})
	t.Run("same call with a new outcome is progress", func(t *testing.T) {
		var steps []func(context.Context, llm.Request) (llm.Response, error)
		for i := range 4 {
			steps = append(steps, callTools(tc(fmt.Sprint("c", i), "read", `{"path":"MEMORY.md"}`)))
		}
		steps = append(steps, reply("done"))
		n := 0
		tool := &echoTool{name: "read", run: func(context.Context, json.RawMessage) (string, error) {
			n++
			return fmt.Sprintf("version %d", n), nil
		}}
		m := newScripted(t, steps...)
		res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{tool}, RepeatLimit: 3})
		if err != nil || res.Stop != StopCompleted {
			t.Fatalf("stop %s err %v", res.Stop, err)
		}
	})
	t.Run("calls after the repeat in the same response are answered, not run", func(t *testing.T) {
		m := newScripted(t,
			callTools(tc("a", "echo", `{}`), tc("b", "echo", `{}`), tc("c", "other", `{}`)),
		)
		other := &echoTool{name: "other"}
		res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{&echoTool{name: "echo"}, other}, RepeatLimit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != StopRepeated || other.runs != 0 {
			t.Fatalf("stop %s, other ran %d times", res.Stop, other.runs)
		}
		if got := res.Messages[3].Content; !strings.HasPrefix(got, "Error: not run: the run was stopped because echo was called 2 times") {
			t.Fatalf("third result = %q", got)
		}
	})
	t.Run("off by default", func(t *testing.T) {
		var steps []func(context.Context, llm.Request) (llm.Response, error)
		for i := range 5 {
			steps = append(steps, callTools(tc(fmt.Sprint("c", i), "echo", `{}`)))
		}
		steps = append(steps, reply("done"))
		res, _ := runLoop(t, t.Context(), &Loop{Model: newScripted(t, steps...), Tools: []Tool{&echoTool{name: "echo"}}})
		if res.Stop != StopCompleted {
			t.Fatalf("stop = %s", res.Stop)
		}
	})
}

func TestLoopCancellation(t *testing.T) {
	t.Run("during a tool: the rest are answered, not run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		blocker := &echoTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			cancel() // the user pressed /stop while this tool ran
			<-ctx.Done()
			return "", ctx.Err()
		}}
		after := &echoTool{name: "after"}
		m := newScripted(t,
			callTools(tc("a", "slow", `{}`), tc("b", "after", `{}`), tc("c", "after", `{"x":1}`)),
		)
		res, err := runLoop(t, ctx, &Loop{Model: m, Tools: []Tool{blocker, after}})
		if !errors.Is(err, context.Canceled) || res.Stop != StopCancelled {
			t.Fatalf("err %v stop %s", err, res.Stop)
		}
		if after.runs != 0 || len(m.Requests()) != 1 {
			t.Fatalf("ran %d more tools, %d model calls", after.runs, len(m.Requests()))
		}
		if res.ToolCalls != 3 || res.ToolErrors != 3 {
			t.Fatalf("ToolCalls %d ToolErrors %d", res.ToolCalls, res.ToolErrors)
		}
		if got := res.Messages[2].Content; got != "Error: not run: the run was cancelled." {
			t.Fatalf("result = %q", got)
		}
	})
	t.Run("during a model call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		m := newScripted(t,
			callTools(tc("a", "echo", `{}`)),
			func(ctx context.Context, _ llm.Request) (llm.Response, error) {
				cancel()
				<-ctx.Done()
				return llm.Response{}, fmt.Errorf("chat: %w", ctx.Err())
			},
		)
		res, err := runLoop(t, ctx, &Loop{Model: m, Tools: []Tool{&echoTool{name: "echo"}}})
		if !errors.Is(err, context.Canceled) || res.Stop != StopCancelled || len(res.Messages) != 2 {
			t.Fatalf("err %v stop %s messages %d", err, res.Stop, len(res.Messages))
		}
	})
	t.Run("before the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		m := newScripted(t)
		res, err := runLoop(t, ctx, &Loop{Model: m})
		if !errors.Is(err, context.Canceled) || res.Stop != StopCancelled || len(m.Requests()) != 0 {
			t.Fatalf("err %v stop %s calls %d", err, res.Stop, len(m.Requests()))
		}
	})
}

func TestLoopModelError(t *testing.T) {
	cause := &llm.Error{Kind: llm.ErrUnavailable, Reason: "connection refused"}
	m := newScripted(t,
		callTools(tc("a", "echo", `{}`)),
		func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, cause },
	)
	res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{&echoTool{name: "echo"}}})
	if !errors.Is(err, llm.ErrUnavailable) || res.Stop != StopModelError {
		t.Fatalf("err %v stop %s", err, res.Stop)
	}
	if len(res.Messages) != 2 || res.Iterations != 2 {
		t.Fatalf("partial progress lost: %+v", res)
	}
}

func TestLoopCapsResults(t *testing.T) {
	big := strings.Repeat("é", 50)
	m := newScripted(t,
		callTools(tc("a", "big", `{}`)), reply("ok"),
	)
	tool := &echoTool{name: "big", run: func(context.Context, json.RawMessage) (string, error) { return big, nil }}
	res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{tool}, MaxResultChars: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 20) + "\n[cut: the result was 50 characters; only the first 20 are shown]"
	if got := res.Messages[1].Content; got != want {
		t.Fatalf("result = %q", got)
	}
}

func TestLoopConfiguration(t *testing.T) {
	if _, err := (&Loop{}).Run(t.Context(), input()); !errors.Is(err, ErrNoModel) {
		t.Fatalf("no model: %v", err)
	}
	l := &Loop{Model: newScripted(t), Tools: []Tool{&echoTool{name: "x"}, &echoTool{name: "x"}}}
	if _, err := l.Run(t.Context(), input()); err == nil || !strings.Contains(err.Error(), `"x" is defined twice`) {
		t.Fatalf("duplicate tools: %v", err)
	}
}

// TestLoopDreamEdit runs the real file tools under DreamPolicy the way Dream
// phase 2 does: read, a refused path, an edit.
func TestLoopDreamEdit(t *testing.T) {
	fx := newFixture(t)
	tools := FileTools(fx.w, DreamPolicy(), ToolReadFile, ToolEditFile)
	m := newScripted(t,
		callTools(tc("r", ToolReadFile, `{"path":"memory/MEMORY.md"}`),
			tc("bad", ToolEditFile, `{"path":"memory/history.jsonl","old_text":"SECRET","new_text":"gone"}`)),
		callTools(tc("e", ToolEditFile, `{"path":"memory/MEMORY.md","old_text":"SECRET memory","new_text":"- User prefers dark mode"}`)),
		reply("done"),
	)
	res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: tools, Purpose: llm.PurposeDreamEdit, MaxIterations: 10, RepeatLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != StopCompleted || res.ToolCalls != 3 || res.ToolErrors != 1 {
		t.Fatalf("result = %+v", res)
	}
	if got := res.Messages[1].Content; got != fixtureFiles["memory/MEMORY.md"] {
		t.Fatalf("read result = %q", got)
	}
	if got := res.Messages[2].Content; !strings.HasPrefix(got, `Error: "memory/history.jsonl" is not one of the files this tool may use`) {
		t.Fatalf("refusal = %q", got)
	}
	b, err := os.ReadFile(filepath.Join(fx.dir, "memory", "MEMORY.md"))
	if err != nil || string(b) != "# Memory\n- User prefers dark mode\n" {
		t.Fatalf("MEMORY.md = %q, %v", b, err)
	}
	for _, msg := range res.Messages {
		noAbsPath(t, fx, msg.Content)
	}
}
