package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
)

// Model is the one call the loop needs; *llm.Client satisfies it.
type Model interface {
	// Chat sends one request. An error means no usable answer; when ctx
	// ended, the error wraps ctx's error.
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// Tool is a function the model may call.
type Tool interface {
	// Def is the tool's name, description and JSON Schema parameters.
	Def() llm.ToolDef
	// Run executes one call. A returned error becomes the tool result text
	// "Error: ..." sent back to the model; it never ends the run. The error
	// text is shown to the model, so it must not carry secrets.
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// Defaults for zero Loop fields.
const (
	DefaultMaxIterations  = 20
	DefaultMaxResultChars = 16_000
)

// Loop runs a conversation with tools: call the model, run the tool calls it
// asks for, send the results back, until it answers without tools or a limit
// ends the run. A Loop holds no per-run state; one value may serve
// concurrent runs.
type Loop struct {
	Model     Model
	Tools     []Tool
	ModelName string // passed as Request.Model ("" = the client's default)
	Purpose   string // usage bucket: llm.PurposeChat, llm.PurposeDreamEdit
	// CacheKey names the conversation for the provider's prompt cache
	// (llm.Request.CacheKey); "" for none.
	CacheKey string
	// MaxIterations bounds the model calls of one run; 0 means 20.
	MaxIterations int
	// RepeatLimit ends the run when the same tool call (name and arguments,
	// compared as JSON values) has had the same outcome this many times: the
	// model is making no progress. 0 turns the check off. The outcome is
	// part of the comparison so that re-reading a file after editing it is
	// not mistaken for a loop.
	RepeatLimit int
	// MaxResultChars caps each tool result; 0 means 16000. A cut result says
	// so at its end.
	MaxResultChars int
	Logger         *slog.Logger
	// OnToolCall, when set, is called with the tool's name before each tool
	// runs (progress indicators).
	OnToolCall func(name string)
	// OnDelta, when set, streams every model call: it receives each
	// fragment of the model's text as it arrives (llm.Request.OnDelta).
	OnDelta func(fragment string)
}

// Stop says why a run ended.
type Stop string

const (
	// StopCompleted: the model answered without asking for tools.
	StopCompleted Stop = "completed"
	// StopMaxIterations: MaxIterations model calls were made and the last
	// still asked for tools (all of them answered).
	StopMaxIterations Stop = "max_iterations"
	// StopRepeated: a tool call repeated with the same outcome RepeatLimit
	// times.
	StopRepeated Stop = "repeated"
	// StopToolFailed: a tool call kept failing with the same system error
	// (ErrIO: disk full, permission denied) RepeatLimit times; the model
	// was not looping, the environment is broken. Result.ToolErr holds the
	// error.
	StopToolFailed Stop = "tool_failed"
	// StopModelError: a model call failed; Run returns its error.
	StopModelError Stop = "model_error"
	// StopCancelled: ctx ended; Run returns ctx's error.
	StopCancelled Stop = "cancelled"
)

// Result is what a run produced. It is valid whatever the Stop: every tool
// call in Messages has exactly one result, so Messages may be stored and sent
// to a model again as they are.
type Result struct {
	// Messages is everything the run appended after the input: assistant
	// messages (with their tool calls), tool results, the final reply.
	Messages []llm.Message
	// Reply is the final answer's text when Stop is StopCompleted.
	Reply      string
	Stop       Stop
	Iterations int // model calls made
	Usage      llm.Usage
	// ToolCalls counts the calls answered; ToolErrors those answered with an
	// error (including calls not run because the run ended).
	ToolCalls, ToolErrors int
	// ToolErr is the error that ended the run when Stop is StopToolFailed.
	// Its text is one sentence without absolute paths.
	ToolErr error
}

// Run continues the conversation msgs (not modified) until the model answers
// or a limit ends it. It returns an error only for StopModelError (the model
// call's error, wrapped) and StopCancelled (ctx's error, wrapped); the Result
// is filled in either way, so callers can keep partial progress. Hitting
// MaxIterations or RepeatLimit is reported in Result.Stop, not as an error.
func (l *Loop) Run(ctx context.Context, msgs []llm.Message) (Result, error) {
	var res Result
	tools, defs, err := l.index()
	if err != nil {
		return res, err
	}
	r := run{
		loop:   l,
		tools:  tools,
		log:    l.logger(),
		conv:   append(make([]llm.Message, 0, len(msgs)+8), msgs...),
		ids:    usedIDs(msgs),
		counts: map[[sha256.Size]byte]int{},
		res:    &res,
	}
	defer func() {
		r.log.Debug("agent run ended", "stop", res.Stop, "iterations", res.Iterations,
			"tool_calls", res.ToolCalls, "tool_errors", res.ToolErrors, "purpose", l.Purpose)
	}()
	maxIter := l.MaxIterations
	if maxIter <= 0 {
		maxIter = DefaultMaxIterations
	}
	for res.Iterations < maxIter {
		if err := ctx.Err(); err != nil {
			return r.cancelled(err)
		}
		resp, err := l.Model.Chat(ctx, llm.Request{
			Model:    l.ModelName,
			Messages: r.conv[:len(r.conv):len(r.conv)],
			Tools:    defs,
			Purpose:  l.Purpose,
			CacheKey: l.CacheKey,
			OnDelta:  l.OnDelta,
		})
		res.Iterations++
		res.Usage = res.Usage.Add(resp.Usage)
		if err != nil {
			if ctx.Err() != nil {
				return r.cancelled(ctx.Err())
			}
			res.Stop = StopModelError
			return res, fmt.Errorf("agent model call %d: %w", res.Iterations, err)
		}
		if len(resp.ToolCalls) == 0 {
			r.add(llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
			res.Reply, res.Stop = resp.Content, StopCompleted
			if resp.FinishReason == llm.FinishLength {
				r.log.Warn("agent reply cut off at the completion limit", "iteration", res.Iterations)
			}
			return res, nil
		}
		if stop := r.answer(ctx, resp); stop != "" {
			res.Stop = stop
			if stop == StopCancelled {
				return res, fmt.Errorf("agent run: %w", ctx.Err())
			}
			return res, nil
		}
	}
	res.Stop = StopMaxIterations
	r.log.Warn("agent run ended at the iteration limit", "iterations", res.Iterations, "tool_calls", res.ToolCalls)
	return res, nil
}

// index checks the loop's configuration and maps tool names to tools.
func (l *Loop) index() (map[string]Tool, []llm.ToolDef, error) {
	if l.Model == nil {
		return nil, nil, ErrNoModel
	}
	tools := make(map[string]Tool, len(l.Tools))
	defs := make([]llm.ToolDef, 0, len(l.Tools))
	for _, t := range l.Tools {
		d := t.Def()
		if _, dup := tools[d.Name]; dup {
			return nil, nil, fmt.Errorf("agent loop: tool %q is defined twice", d.Name)
		}
		tools[d.Name] = t
		defs = append(defs, d)
	}
	return tools, defs, nil
}

func (l *Loop) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Logger
}

// run is the state of one Loop.Run.
type run struct {
	loop   *Loop
	tools  map[string]Tool
	log    *slog.Logger
	conv   []llm.Message // input plus everything appended
	ids    map[string]bool
	counts map[[sha256.Size]byte]int // repeat detection: call+outcome -> times
	res    *Result
}

func (r *run) add(m llm.Message) {
	r.conv = append(r.conv, m)
	r.res.Messages = append(r.res.Messages, m)
}

// cancelled ends the run after ctx ended between steps; nothing is left
// unanswered at those points.
func (r *run) cancelled(err error) (Result, error) {
	r.res.Stop = StopCancelled
	return *r.res, fmt.Errorf("agent run: %w", err)
}

// answer records the assistant message and one result per tool call, in
// order. It returns a Stop when the run must end after this response.
func (r *run) answer(ctx context.Context, resp llm.Response) Stop {
	calls := make([]llm.ToolCall, len(resp.ToolCalls))
	copy(calls, resp.ToolCalls)
	// dupOf[i] >= 0: call i repeats call dupOf[i] of this response exactly
	// (same id, name and arguments) — a provider glitch; it is not run twice.
	dupOf := make([]int, len(calls))
	firstByID := map[string]int{}
	for i := range calls {
		dupOf[i] = -1
		id := calls[i].ID
		if j, seen := firstByID[id]; seen && id != "" &&
			calls[j].Name == calls[i].Name && calls[j].Arguments == calls[i].Arguments {
			dupOf[i] = j
		}
		if _, seen := firstByID[id]; !seen {
			firstByID[id] = i
		}
		// Strict providers reject a request in which two tool calls share an
		// id (or one has none), so such a call gets a fresh id before the
		// message is recorded; the model sees the renamed call with its own
		// result.
		if id == "" || r.ids[id] {
			calls[i].ID = r.freshID()
		}
		r.ids[calls[i].ID] = true
	}
	r.add(llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: calls})

	var stop Stop
	var stopNote string
	for i, c := range calls {
		var out string
		var failed bool
		switch {
		case stop != "":
			out, failed = "Error: not run: "+stopNote, true
		case ctx.Err() != nil:
			stop, stopNote = StopCancelled, "the run was cancelled."
			out, failed = "Error: not run: "+stopNote, true
		case dupOf[i] >= 0:
			out, failed = fmt.Sprintf("Error: not run: this call repeats call %s of the same response.", calls[dupOf[i]].ID), true
		default:
			var terr error
			out, failed, terr = r.call(ctx, c)
			if r.repeated(c, out) {
				stop, stopNote = r.repeatStop(c, terr)
			}
		}
		r.res.ToolCalls++
		if failed {
			r.res.ToolErrors++
		}
		r.add(llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: out})
	}
	if stop == "" && ctx.Err() != nil {
		stop = StopCancelled
	}
	return stop
}

// repeatStop names why a call that repeated with the same outcome ends the
// run. A call that kept failing on a system error (disk full) is not the
// model going round in circles, and is not reported as such.
func (r *run) repeatStop(c llm.ToolCall, terr error) (Stop, string) {
	if terr != nil && errors.Is(terr, ErrIO) {
		r.res.ToolErr = terr
		r.log.Warn("agent run stopped: a tool kept failing", "tool", c.Name, "times", r.loop.RepeatLimit, "err", terr)
		return StopToolFailed, fmt.Sprintf("the run was stopped because %s failed %d times: %v.", c.Name, r.loop.RepeatLimit, terr)
	}
	r.log.Warn("agent run stopped: the same tool call kept repeating", "tool", c.Name, "times", r.loop.RepeatLimit)
	return StopRepeated, fmt.Sprintf("the run was stopped because %s was called %d times with the same arguments and the same outcome.", c.Name, r.loop.RepeatLimit)
}

// call runs one tool call and returns its result text, whether it is an
// error, and the tool's own error when it returned one. It never panics.
func (r *run) call(ctx context.Context, c llm.ToolCall) (out string, failed bool, terr error) {
	t, ok := r.tools[c.Name]
	if !ok {
		return fmt.Sprintf("Error: unknown tool %q; the tools are: %s.", c.Name, strings.Join(r.toolNames(), ", ")), true, nil
	}
	args := json.RawMessage(c.Arguments)
	if len(bytes.TrimSpace(args)) == 0 {
		// Some providers send no arguments at all for a call without any.
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return fmt.Sprintf("Error: the arguments of %s are not valid JSON; send one JSON object.", c.Name), true, nil
	}
	if r.loop.OnToolCall != nil {
		r.loop.OnToolCall(c.Name)
	}
	start := time.Now()
	text, err := r.safeRun(ctx, t, c.Name, args)
	switch {
	case err != nil && ctx.Err() != nil:
		out, failed = "Error: cancelled: "+err.Error(), true
	case err != nil:
		out, failed = "Error: "+err.Error(), true
	default:
		out = text
	}
	out = r.cap(out)
	r.log.Debug("agent tool call", "tool", c.Name, "id", c.ID, "failed", failed,
		"result_chars", len(out), "duration", time.Since(start))
	return out, failed, err
}

// safeRun turns a panicking tool into an error result; a tool bug must not
// take down the turn (or the gateway) and leave a call unanswered.
func (r *run) safeRun(ctx context.Context, t Tool, name string, args json.RawMessage) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("agent tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			text, err = "", fmt.Errorf("%s failed with an internal error", name)
		}
	}()
	return t.Run(ctx, args)
}

// cap cuts a result to MaxResultChars runes, saying so.
func (r *run) cap(s string) string {
	limit := r.loop.MaxResultChars
	if limit <= 0 {
		limit = DefaultMaxResultChars
	}
	kept, cut := textcut.Chars(s, limit, "")
	if !cut {
		return s
	}
	return kept + fmt.Sprintf("\n[cut: the result was %d characters; only the first %d are shown]", utf8.RuneCountInString(s), limit)
}

// repeated counts c with its outcome and reports whether RepeatLimit is hit.
func (r *run) repeated(c llm.ToolCall, out string) bool {
	if r.loop.RepeatLimit <= 0 {
		return false
	}
	h := sha256.New()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write(normaliseArgs(c.Arguments))
	h.Write([]byte{0})
	h.Write([]byte(out))
	var key [sha256.Size]byte
	h.Sum(key[:0])
	r.counts[key]++
	return r.counts[key] >= r.loop.RepeatLimit
}

// normaliseArgs re-encodes JSON arguments so that key order and spacing do
// not make one call look like another.
func normaliseArgs(s string) []byte {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []byte(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(s)
	}
	return b
}

func (r *run) freshID() string {
	for n := len(r.ids) + 1; ; n++ {
		id := fmt.Sprintf("call_dg%d", n)
		if !r.ids[id] {
			return id
		}
	}
}

func (r *run) toolNames() []string {
	names := make([]string, 0, len(r.loop.Tools))
	for _, t := range r.loop.Tools {
		names = append(names, t.Def().Name)
	}
	return names
}

// usedIDs collects the tool call ids already in the conversation: a new call
// reusing one would make the request invalid for strict providers.
func usedIDs(msgs []llm.Message) map[string]bool {
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			ids[c.ID] = true
		}
	}
	return ids
}
