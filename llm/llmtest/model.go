package llmtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// Step answers one call of a Model. It is an alias, so a test's own
// []func(context.Context, llm.Request) (llm.Response, error) is a []Step.
type Step = func(ctx context.Context, req llm.Request) (llm.Response, error)

// Model is the in-process scripted model, for tests of a package that
// takes a Chat(ctx, llm.Request) (llm.Response, error) dependency and has
// no use for the wire (the Server is for those that go through llm.Client):
// each call is answered by the next Step of a FIFO script, then by the
// step given to Then. It records every request and how many calls ran at
// once, and is safe for concurrent use.
//
// Like a strict provider it rejects with an HTTP 400 (*llm.Error,
// ErrRejected) and fails the test on a call past the script when no Then
// step was given, and on a request its Check function refuses.
type Model struct {
	t     testing.TB
	mu    sync.Mutex
	steps []Step
	then  Step
	check func([]llm.Message) error
	reqs  []llm.Request

	inflight, maxInflight atomic.Int32
}

// NewModel returns a Model answering its first calls with steps.
func NewModel(t testing.TB, steps ...Step) *Model {
	return &Model{t: t, steps: steps}
}

// Then makes f answer every call past the script, and returns m.
func (m *Model) Then(f Step) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.then = f
	return m
}

// Check makes m refuse, as a strict provider does, every request whose
// messages f finds invalid, and returns m.
func (m *Model) Check(f func([]llm.Message) error) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.check = f
	return m
}

// Push appends steps to the script.
func (m *Model) Push(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
}

// Chat records req and answers it with the next step.
func (m *Model) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := m.inflight.Add(1)
	defer m.inflight.Add(-1)
	for {
		old := m.maxInflight.Load()
		if n <= old || m.maxInflight.CompareAndSwap(old, n) {
			break
		}
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	call := len(m.reqs)
	var step Step
	if len(m.steps) > 0 {
		step, m.steps = m.steps[0], m.steps[1:]
	} else {
		step = m.then
	}
	check := m.check
	m.mu.Unlock()
	if check != nil {
		if err := check(req.Messages); err != nil {
			m.t.Errorf("model call %d is invalid: %v", call, err)
			return llm.Response{}, &llm.Error{Kind: llm.ErrRejected, Status: 400, Reason: err.Error()}
		}
	}
	if step == nil {
		m.t.Errorf("unexpected model call %d", call)
		return llm.Response{}, &llm.Error{Kind: llm.ErrRejected, Status: 400, Reason: fmt.Sprintf("unexpected model call %d", call)}
	}
	return step(ctx, req)
}

// Requests returns a copy of every request received so far, in order.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

// MaxInflight returns the most calls that ran at once.
func (m *Model) MaxInflight() int { return int(m.maxInflight.Load()) }

// Answer is a Step answering resp.
func Answer(resp llm.Response) Step {
	return func(context.Context, llm.Request) (llm.Response, error) { return resp, nil }
}

// Fail is a Step failing with err.
func Fail(err error) Step {
	return func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, err }
}
