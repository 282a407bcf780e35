package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
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
	for i, r := range reqs {
		// The provider may route a conversation's calls by it (llm hashes it).
		if r.CacheKey != "test:tools" {
			t.Errorf("request %d: CacheKey %q, want the session key", i, r.CacheKey)
		}
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
		return textReply("echo " + llmtest.Spoken(last.Content)), nil
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

// A script's lines (InOrder) wait for room in a full queue instead of
// being refused: every one is answered, in order.
func TestInOrderMessagesWaitForRoom(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return textReply("re: " + llmtest.Spoken(req.Messages[len(req.Messages)-1].Content)), nil
	}, func(c *Config, _ *Deps) { c.QueueSize = 2 })
	const n = 10
	dones := make(chan (<-chan Result), n)
	submitted := make(chan error, 1)
	go func() {
		for i := range n {
			in := inbound("script", fmt.Sprint("line ", i))
			in.InOrder = true
			d, err := env.g.Submit(t.Context(), in)
			if err != nil {
				submitted <- fmt.Errorf("line %d: %w", i, err)
				return
			}
			dones <- d
		}
		submitted <- nil
	}()
	// The queue is full with the first turn held: a person's message is
	// still refused at once.
	for len(dones) < 3 {
		runtime.Gosched()
	}
	if _, err := env.g.Submit(t.Context(), inbound("script", "typed")); !errors.Is(err, channels.ErrBusy) {
		t.Errorf("a person's message to a full queue: %v, want ErrBusy", err)
	}
	close(release)
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	close(dones)
	i := 0
	for d := range dones {
		if r := wait(t, d); r.Err != nil || r.Reply != fmt.Sprint("re: line ", i) {
			t.Errorf("line %d: %+v", i, r)
		}
		i++
	}
}

// A script waiting for room gives up when its context ends.
func TestInOrderWaitEndsWithContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return textReply("ok"), nil
	}, func(c *Config, _ *Deps) { c.QueueSize = 1 })
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 3)
	go func() {
		for i := range 3 {
			in := inbound("script", fmt.Sprint(i))
			in.InOrder = true
			_, err := env.g.Submit(ctx, in)
			errs <- err
		}
	}()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("third line after cancel: %v, want context.Canceled", err)
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

// A script's /stop (InOrder) waits its turn: what came before it is
// answered by then, so it says nothing is running, and the lines behind it
// (sent after it) are answered, not dropped.
func TestInOrderStopSaysNothingIsRunning(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, req llm.Request) (llm.Response, error) {
		<-release
		return textReply("re: " + llmtest.Spoken(req.Messages[len(req.Messages)-1].Content)), nil
	}, nil)
	var dones []<-chan Result
	for _, text := range []string{"first", "/stop", "second"} {
		in := inbound("script-stop", text)
		in.InOrder = true
		d, err := env.g.Submit(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, d)
	}
	close(release)
	for i, want := range []string{"re: first", "Nothing is running here.", "re: second"} {
		if r := wait(t, dones[i]); r.Err != nil || r.Reply != want {
			t.Errorf("reply %d = %+v, want %q", i, r, want)
		}
	}
}

// Every user message with a sender is named, whoever else spoke (the name
// depends on the message alone), and names cannot break out of the
// brackets.
func TestNameSenders(t *testing.T) {
	one := []llm.Message{{Role: llm.RoleUser, Sender: "ana", Content: "a"}, {Role: llm.RoleAssistant, Content: "b"}, {Role: llm.RoleUser, Sender: "ana", Content: "c"}}
	nameSenders(one)
	if one[0].Content != "[ana] a" || one[2].Content != "[ana] c" {
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

// Reasoning a model leaks into its reply is neither shown nor kept.
func TestLeakedReasoningIsNotShownNorKept(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"think", "<think>SECRET the user is Ana</think>\nHello Ana."},
		{"gpt-oss", "<|channel|>analysis<|message|>SECRET greet her<|end|><|start|>assistant<|channel|>final<|message|>Hello Ana.<|return|>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
				return textReply(tc.answer), nil
			}, nil)
			done, err := env.g.Submit(t.Context(), inbound("r-"+tc.name, "hi"))
			if err != nil {
				t.Fatal(err)
			}
			if r := wait(t, done); r.Err != nil || r.Reply != "Hello Ana." {
				t.Fatalf("result = %+v", r)
			}
			if out := env.ch.next(t); out.Text != "Hello Ana." {
				t.Errorf("sent %q", out.Text)
			}
			sess, _ := env.sessions.Get("test:r-" + tc.name)
			for _, m := range sess.Messages() {
				if strings.Contains(m.Content, "SECRET") {
					t.Errorf("the session keeps the reasoning: %q", m.Content)
				}
			}
		})
	}
}

// failingTool always fails with a system error that names a path.
type failingTool struct{}

func (failingTool) Def() llm.ToolDef {
	return llm.ToolDef{Name: "flaky", Description: "fails", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (failingTool) Run(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("write /srv/secret/MEMORY.md: %w", agent.ErrIO)
}

// A chat turn whose model repeats one tool call with the same outcome ends
// after three such calls, well before the iteration limit, and its sender
// reads one sentence saying why.
func TestChatTurnStopsARepeatedToolCall(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		want             string
	}{
		{"same call, same result", "list_dir", `{"path":"."}`, "same tool call with the same result"},
		{"a tool that keeps failing", "flaky", `{}`, "a tool kept failing the same way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
				return llm.Response{FinishReason: llm.FinishToolCalls, ToolCalls: []llm.ToolCall{
					{ID: fmt.Sprint("c", n.Add(1)), Name: tc.tool, Arguments: tc.args}}}, nil
			}, func(c *Config, d *Deps) {
				c.MaxToolIterations = 10
				d.Tools = append(d.Tools, failingTool{})
			})
			r := wait(t, must(env.g.Submit(t.Context(), inbound("loop", "list it"))))
			if !strings.Contains(r.Reply, tc.want) || strings.Contains(r.Reply, "/srv") {
				t.Errorf("reply = %q, want one sentence containing %q", r.Reply, tc.want)
			}
			if out := env.ch.next(t); out.Text != r.Reply {
				t.Errorf("sent %q, result %q", out.Text, r.Reply)
			}
			if got := len(env.model.Requests()); got != 3 {
				t.Errorf("model calls = %d, want 3", got)
			}
		})
	}
}

// A conversation another process holds is not answered: the sender reads
// the one sentence that says so, nothing reaches the model or the file, and
// /new is refused the same way. Once the other process lets go, it works.
func TestTurnOnAConversationHeldElsewhereIsRefused(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("noted"), nil
	}, nil)
	other, err := session.NewStore(filepath.Join(filepath.Dir(env.ws), "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := inbound("busy", "x").SessionKey
	held, err := other.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Append(llm.Message{Role: llm.RoleUser, Content: "theirs"}); err != nil {
		t.Fatal(err)
	}

	say := func(text string) (Result, channels.Outbound) {
		t.Helper()
		done, err := env.g.Submit(t.Context(), inbound("busy", text))
		if err != nil {
			t.Fatal(err)
		}
		r := wait(t, done)
		return r, env.ch.next(t)
	}
	want := fmt.Sprintf("This conversation is open in another dreamgate process (pid %d); use --session NAME for another one.", os.Getpid())
	r, out := say("remember X=1")
	if r.Err == nil || out.Kind != channels.KindError || out.Text != want {
		t.Fatalf("turn on a held conversation: result %+v, sent %+v", r, out)
	}
	if _, out := say("/new"); out.Text != want {
		t.Errorf("/new on a held conversation: %+v", out)
	}
	if n := len(env.model.Requests()); n != 0 {
		t.Errorf("%d model calls for a refused turn", n)
	}
	if msgs := held.Messages(); len(msgs) != 1 {
		t.Errorf("the holder's file has %v", msgs)
	}

	if !other.Evict(held) {
		t.Fatal("evict")
	}
	if r, out := say("remember X=1"); r.Err != nil || out.Text != "noted" {
		t.Errorf("after the other process let go: %+v, %+v", r, out)
	}
}

// A burst over many conversations leaves no descriptor open per
// conversation once it is answered: a session lets go of its file and lock
// when its queue empties, and stays in memory (a gateway held about two per
// conversation for an hour: 1,212 two minutes after 3,000 messages in 300
// conversations). A local terminal's conversation is kept, so that another
// process is refused it.
func TestBurstLeavesNoDescriptorPerConversation(t *testing.T) {
	count := func() int {
		t.Helper()
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd to count descriptors with")
		}
		return len(fds)
	}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("ok"), nil
	}, nil)
	// What the process opens once (the runtime's poller, ...) is counted
	// before the burst.
	wait(t, mustSubmit(t, env, inbound("warm-up", "hi")))
	before := count()
	const conversations, each = 100, 3
	var dones []<-chan Result
	for i := range conversations {
		for j := range each {
			in := inbound(fmt.Sprint("c", i), fmt.Sprint("message ", j))
			in.MessageID = fmt.Sprint(i, ".", j)
			dones = append(dones, mustSubmit(t, env, in))
		}
	}
	for _, d := range dones {
		if r := wait(t, d); r.Err != nil || r.Reply != "ok" {
			t.Fatalf("burst: %+v", r)
		}
	}
	if after := count(); after > before+4 {
		t.Errorf("%d descriptors open after a burst over %d conversations, %d before: the conversations hold theirs", after, conversations, before)
	}
	if n := len(env.sessions.Loaded()); n != conversations+1 {
		t.Errorf("%d sessions in memory, want all %d (let go of, not evicted)", n, conversations+1)
	}

	local := inbound("terminal", "hi")
	local.Local, local.MessageID = true, ""
	wait(t, mustSubmit(t, env, local))
	other, err := session.NewStore(filepath.Join(filepath.Dir(env.ws), "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var le *session.LockedError
	if _, err := other.Get(local.SessionKey); !errors.As(err, &le) {
		t.Errorf("another process got the local terminal's conversation (err %v)", err)
	}
	if _, err := other.Get("test:c0"); err != nil {
		t.Errorf("another process was refused a conversation answered and let go of: %v", err)
	}
}
