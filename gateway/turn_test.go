package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

func TestTurnRunsToolsAndPersists(t *testing.T) {
	calls := 0
	env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		calls++
		if calls == 1 {
			return llm.Response{
				ToolCalls:    []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"USER.md"}`}},
				FinishReason: llm.FinishToolCalls,
			}, nil
		}
		return textReply("You have no profile yet."), nil
	}, nil)
	done, err := env.g.Submit(t.Context(), inbound("tools", "what do you know about me?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); r.Err != nil || r.Reply != "You have no profile yet." {
		t.Fatalf("result = %+v", r)
	}
	reqs := env.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model saw %d requests, want 2", len(reqs))
	}
	last := reqs[1].Messages
	tool := last[len(last)-1]
	if tool.Role != llm.RoleTool || tool.ToolCallID != "call_1" || !strings.Contains(tool.Content, "# Users") {
		t.Errorf("second request does not end with USER.md's tool result: %+v", tool)
	}
	if sys := last[0]; sys.Role != llm.RoleSystem || !strings.Contains(sys.Content, "# Soul") {
		t.Errorf("system prompt lacks SOUL.md: %.200q", sys.Content)
	}
	sess, _ := env.sessions.Get("test:tools")
	roles := []string{}
	for _, m := range sess.Messages() {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant" {
		t.Errorf("session holds %s", got)
	}
}

func TestModelFailureIsOneSentence(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.ErrRejected, Status: 400, Err: fmt.Errorf(`{"error":{"message":"secret body"}}`)}
	}, nil)
	done, _ := env.g.Submit(t.Context(), inbound("fail", "hi"))
	r := wait(t, done)
	if r.Err == nil {
		t.Fatal("want a failed result")
	}
	out := env.ch.next(t)
	if out.Kind != channels.KindError || strings.Contains(out.Text, "secret") || strings.Count(out.Text, ".") > 2 {
		t.Errorf("user saw %q (kind %q)", out.Text, out.Kind)
	}
	// What the user said is kept even though the turn failed.
	sess, _ := env.sessions.Get("test:fail")
	if msgs := sess.Messages(); len(msgs) != 1 || msgs[0].Content != "hi" {
		t.Errorf("session = %+v", msgs)
	}
}

// Two hundred conversations at once: every message answered exactly once,
// each conversation's replies in order.
func TestManySessionsInParallel(t *testing.T) {
	const sessions, perSession = 200, 3
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		last := req.Messages[len(req.Messages)-1]
		return textReply("echo " + last.Content), nil
	}, func(c *Config, d *Deps) {
		d.Model = LimitConcurrency(d.Model, 8)
	})
	var wg sync.WaitGroup
	results := make([][]Result, sessions)
	for s := range sessions {
		wg.Go(func() {
			var dones []<-chan Result
			for i := range perSession {
				done, err := env.g.Submit(context.Background(), inbound(fmt.Sprint("s", s), fmt.Sprintf("m%d-%d", s, i)))
				if err != nil {
					t.Error(err)
					return
				}
				dones = append(dones, done)
			}
			for _, d := range dones {
				results[s] = append(results[s], wait(t, d))
			}
		})
	}
	wg.Wait()
	perKey := map[string][]string{}
	for range sessions * perSession {
		out := env.ch.next(t)
		perKey[out.SessionKey] = append(perKey[out.SessionKey], out.Text)
	}
	select {
	case extra := <-env.ch.got:
		t.Fatalf("an extra message was sent: %+v", extra)
	default:
	}
	for s := range sessions {
		key := fmt.Sprint("test:s", s)
		got := perKey[key]
		if len(got) != perSession {
			t.Fatalf("%s got %d replies, want %d", key, len(got), perSession)
		}
		for i, text := range got {
			if want := fmt.Sprintf("echo m%d-%d", s, i); text != want {
				t.Errorf("%s reply %d = %q, want %q", key, i, text, want)
			}
		}
	}
}

func TestStopCancelsTheRunningTurn(t *testing.T) {
	started := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		close(started)
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}, nil)
	done, _ := env.g.Submit(t.Context(), inbound("stop", "write me a novel"))
	<-started
	stopDone, _ := env.g.Submit(t.Context(), inbound("stop", "/stop"))
	wait(t, stopDone)
	r := wait(t, done)
	if r.Err == nil || r.Reply != "Stopped." {
		t.Errorf("cancelled turn result = %+v", r)
	}
	idle, _ := env.g.Submit(t.Context(), inbound("stop", "/stop"))
	if r := wait(t, idle); r.Reply != "Nothing is running here." {
		t.Errorf("second /stop = %q", r.Reply)
	}
}

func TestShutdownLosesNoAcceptedMessage(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-release:
			return textReply("done"), nil
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}, nil)
	var dones []<-chan Result
	for i := range 3 {
		d, err := env.g.Submit(t.Context(), inbound("shut", fmt.Sprint("message ", i)))
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no patience at all: the running turn is cancelled at once
	if err := env.g.Shutdown(ctx); err == nil {
		t.Error("Shutdown with an expired context should report the cancelled turns")
	}
	// A message arriving after shutdown began is saved and answered with
	// a notice, never dropped.
	late, err := env.g.Submit(t.Context(), inbound("shut", "late"))
	if err != nil {
		t.Fatalf("Submit after Shutdown = %v", err)
	}
	if r := wait(t, late); r.Err == nil || r.Reply != shutdownNotice {
		t.Errorf("late message result = %+v", r)
	}
	for _, d := range dones {
		if r := wait(t, d); r.Err == nil {
			t.Errorf("a turn reported success after a cancelled shutdown: %+v", r)
		}
	}
	sess, _ := env.sessions.Get("test:shut")
	var said []string
	for _, m := range sess.Messages() {
		if m.Role == llm.RoleUser {
			said = append(said, m.Content)
		}
	}
	if got := strings.Join(said, "|"); got != "message 0|message 1|message 2|late" {
		t.Errorf("saved user messages = %q", got)
	}
}

func TestShutdownLetsQueuedTurnsFinish(t *testing.T) {
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return textReply("ok"), nil
	}, nil)
	var dones []<-chan Result
	for i := range 5 {
		d, _ := env.g.Submit(t.Context(), inbound("drain", fmt.Sprint(i)))
		dones = append(dones, d)
	}
	if err := env.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range dones {
		if r := wait(t, d); r.Err != nil || r.Reply != "ok" {
			t.Errorf("queued turn = %+v", r)
		}
	}
}

func TestQueueIsBounded(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return textReply("ok"), nil
	}, func(c *Config, _ *Deps) { c.QueueSize = 2 })
	defer close(release)
	var busy bool
	for i := range 5 {
		if _, err := env.g.Submit(t.Context(), inbound("busy", fmt.Sprint(i))); err == channels.ErrBusy {
			busy = true
		}
	}
	if !busy {
		t.Error("a full session queue must refuse with ErrBusy")
	}
}

func TestNewStartsOverAndKeepsTheOldFile(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("hi"), nil }, nil)
	wait(t, must(env.g.Submit(t.Context(), inbound("new", "remember the blue door"))))
	before, _ := env.sessions.Get("test:new")
	wait(t, must(env.g.Submit(t.Context(), inbound("new", "/new"))))
	after, _ := env.sessions.Get("test:new")
	if after.ID() == before.ID() || after.Len() != 0 {
		t.Errorf("/new did not start a fresh session (ids %s %s, len %d)", before.ID(), after.ID(), after.Len())
	}
	if before.Len() != 2 {
		t.Errorf("the old session lost messages: %d", before.Len())
	}
}

func must(d <-chan Result, err error) <-chan Result {
	if err != nil {
		panic(err)
	}
	return d
}

// /stop stops what the person sees: the running turn and the messages
// queued behind it, each told it was dropped.
func TestStopDropsQueuedMessages(t *testing.T) {
	started := make(chan struct{}, 4)
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		started <- struct{}{}
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}, nil)
	running, _ := env.g.Submit(t.Context(), inbound("stopq", "write me a novel"))
	<-started
	q1, _ := env.g.Submit(t.Context(), inbound("stopq", "and a poem"))
	q2, _ := env.g.Submit(t.Context(), inbound("stopq", "and a song"))
	stopDone, _ := env.g.Submit(t.Context(), inbound("stopq", "/stop"))
	wait(t, stopDone)
	if r := wait(t, running); r.Reply != "Stopped." {
		t.Errorf("running turn = %+v", r)
	}
	for i, q := range []<-chan Result{q1, q2} {
		if r := wait(t, q); r.Err == nil || r.Reply != stoppedNotice {
			t.Errorf("queued message %d = %+v, want dropped", i+1, r)
		}
	}
	select {
	case <-started:
		t.Fatal("a queued message reached the model after /stop")
	default:
	}
	notices := 0
	for range 3 {
		out := env.ch.next(t)
		if out.Kind != channels.KindError {
			t.Errorf("sent %+v", out)
		}
		if out.Text == stoppedNotice {
			notices++
		}
	}
	if notices != 2 {
		t.Errorf("%d stopped notices, want 2", notices)
	}
}

// Senders are named only among several of them, and their names cannot
// break out of the brackets.
func TestNameSenders(t *testing.T) {
	one := []llm.Message{{Role: llm.RoleUser, Sender: "ana", Content: "a"}, {Role: llm.RoleAssistant, Content: "b"}, {Role: llm.RoleUser, Sender: "ana", Content: "c"}}
	nameSenders(one)
	if one[0].Content != "a" || one[2].Content != "c" {
		t.Errorf("one sender: %q, %q", one[0].Content, one[2].Content)
	}
	two := []llm.Message{
		{Role: llm.RoleUser, Sender: "ana", Content: "a"},
		{Role: llm.RoleUser, Content: "context, no sender"},
		{Role: llm.RoleAssistant, Sender: "x", Content: "b"},
		{Role: llm.RoleUser, Sender: "bo]b\n[x", Content: "c"},
	}
	nameSenders(two)
	want := []string{"[ana] a", "context, no sender", "b", "[bob x] c"}
	for i, m := range two {
		if m.Content != want[i] {
			t.Errorf("message %d = %q, want %q", i, m.Content, want[i])
		}
	}
}
