package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// errorsOnly records what a Model reports to its test instead of failing it.
type errorsOnly struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (e *errorsOnly) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errors = append(e.errors, fmt.Sprintf(format, args...))
}

func userReq(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestModelAnswersInOrderThenWithThen(t *testing.T) {
	boom := errors.New("boom")
	m := llmtest.NewModel(t, llmtest.Answer(llm.Response{Content: "one"}), llmtest.Fail(boom))
	m.Push(llmtest.Answer(llm.Response{Content: "three"}))
	m.Then(func(_ context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Content: "echo " + req.Messages[0].Content}, nil
	})
	var got []string
	for i := range 5 {
		resp, err := m.Chat(t.Context(), userReq(fmt.Sprint(i)))
		got = append(got, fmt.Sprint(resp.Content, err))
	}
	want := []string{"one<nil>", "boom", "three<nil>", "echo 3<nil>", "echo 4<nil>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	reqs := m.Requests()
	if len(reqs) != 5 || reqs[4].Messages[0].Content != "4" {
		t.Errorf("recorded %d requests: %+v", len(reqs), reqs)
	}
}

func TestModelRejectsWhatItDoesNotExpect(t *testing.T) {
	rec := &errorsOnly{TB: t}
	m := llmtest.NewModel(rec, llmtest.Answer(llm.Response{Content: "ok"})).Check(func(msgs []llm.Message) error {
		if msgs[0].Content == "bad" {
			return errors.New("bad message")
		}
		return nil
	})
	if _, err := m.Chat(t.Context(), userReq("bad")); !errors.Is(err, llm.ErrRejected) {
		t.Errorf("refused request: err %v, want ErrRejected", err)
	}
	if _, err := m.Chat(t.Context(), userReq("fine")); !errors.Is(err, llm.ErrRejected) {
		t.Errorf("call past the script: err %v, want ErrRejected", err)
	}
	if len(rec.errors) != 2 {
		t.Errorf("the test was told %q, want one error for each", rec.errors)
	}
}

func TestModelCountsCallsInFlight(t *testing.T) {
	const n = 3
	arrived, release := make(chan struct{}), make(chan struct{})
	m := llmtest.NewModel(t).Then(func(context.Context, llm.Request) (llm.Response, error) {
		arrived <- struct{}{}
		<-release
		return llm.Response{}, nil
	})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _, _ = m.Chat(t.Context(), userReq("x")) })
	}
	for range n {
		<-arrived
	}
	close(release)
	wg.Wait()
	if got := m.MaxInflight(); got != n {
		t.Errorf("MaxInflight = %d, want %d", got, n)
	}
}
