package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// blockingDreamer is a Dream that runs until its context ends.
type blockingDreamer struct {
	started  chan struct{}
	canceled chan struct{}
}

func (d *blockingDreamer) Run(ctx context.Context, _ string, _ func(string)) (dream.Report, error) {
	close(d.started)
	<-ctx.Done()
	close(d.canceled)
	return dream.Report{Outcome: dream.OutcomeFailed, Reason: "the Dream was cancelled"}, ctx.Err()
}
func (d *blockingDreamer) Restore(string) (dream.RestoreResult, error) {
	return dream.RestoreResult{}, nil
}
func (d *blockingDreamer) Status() dream.Status { return dream.Status{} }

// A /dream started from chat does not hold a stopping service for Dream's
// half hour: CancelBackground cancels it, and Shutdown waits for it to end
// and returns.
func TestShutdownCancelsDream(t *testing.T) {
	d := &blockingDreamer{started: make(chan struct{}), canceled: make(chan struct{})}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("ok"), nil
	}, func(_ *Config, deps *Deps) { deps.Dream = d })
	done, err := env.g.Submit(t.Context(), inbound("s1", "/dream"))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	select {
	case <-d.started:
	case <-time.After(10 * time.Second):
		t.Fatal("Dream did not start")
	}
	// The shutdown budget is far longer than the test may take: only a
	// cancelled Dream lets Shutdown return in time.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	stopped := make(chan error, 1)
	env.g.CancelBackground()
	go func() { stopped <- env.g.Shutdown(ctx) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waited for a running /dream instead of cancelling it")
	}
	select {
	case <-d.canceled:
	default:
		t.Error("Shutdown returned while the Dream was still running")
	}
	var last channels.Outbound
	for len(env.ch.got) > 0 {
		last = <-env.ch.got
	}
	if !strings.Contains(last.Text, "cancelled") {
		t.Errorf("the /dream reply after shutdown is %q, want it to say the Dream was cancelled", last.Text)
	}
}

// pendingSession writes a session file as a killed process leaves it: a
// user message with its origin, maybe the turn's reply, no answered mark.
func pendingSession(t *testing.T, st *session.Store, key, msgID, text string, at time.Time, reply string) {
	t.Helper()
	s, err := st.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	o := session.Origin{Channel: "test", ChatID: strings.TrimPrefix(key, "test:"), MessageID: msgID, SenderID: "U1"}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: text, Time: at}, o); err != nil {
		t.Fatal(err)
	}
	if reply != "" {
		if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: reply, Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	st.Evict(s)
}

// At start the gateway answers what a crash left: a recent message gets a
// turn (recorded once), a recorded reply is sent without a model call, an
// old message is asked for again, an answered one is left alone, and no
// second start answers any of them again.
func TestAnswerPendingAtStart(t *testing.T) {
	now := time.Now()
	calls := 0
	env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		calls++
		return textReply("answer: " + req.Messages[len(req.Messages)-1].Content), nil
	}, func(cfg *Config, _ *Deps) { cfg.AnswerPending = 10 * time.Minute })
	if err := env.g.OpenInbox(filepath.Join(t.TempDir(), "inbox.jsonl")); err != nil {
		t.Fatal(err)
	}
	st := env.sessions
	pendingSession(t, st, "test:recent", "m1", "recent question", now.Add(-time.Minute), "")
	pendingSession(t, st, "test:replied", "m2", "replied question", now.Add(-time.Minute), "the recorded reply")
	pendingSession(t, st, "test:old", "m3", "old question", now.Add(-time.Hour), "")
	pendingSession(t, st, "test:done", "m4", "done question", now.Add(-time.Minute), "done reply")
	done, _ := st.Get("test:done")
	if err := done.MarkAnswered(); err != nil {
		t.Fatal(err)
	}

	env.g.answerPending()
	got := map[string]channels.Outbound{}
	for range 3 {
		o := env.ch.next(t)
		got[o.SessionKey] = o
	}
	if o := got["test:recent"]; o.Text != "answer: recent question" || o.ReplyTo != "m1" {
		t.Errorf("recent message answered with %+v", o)
	}
	if o := got["test:replied"]; o.Text != "the recorded reply" {
		t.Errorf("recorded reply sent as %+v", o)
	}
	if o := got["test:old"]; o.Text != restartedNotice || o.Kind != channels.KindError {
		t.Errorf("old message answered with %+v", o)
	}
	if calls != 1 {
		t.Errorf("%d model calls, want 1 (the recent message only)", calls)
	}
	// Wait for the workers, then look at what the sessions hold.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	recent, _ := st.Get("test:recent")
	users := 0
	for _, m := range recent.Messages() {
		if m.Role == llm.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the recent message is recorded %d times, want once", users)
	}
	for _, key := range []string{"test:recent", "test:replied", "test:old", "test:done"} {
		s, _ := st.Get(key)
		if p, ok := s.Pending(); ok {
			t.Errorf("%s still pending after the start: %+v", key, p)
		}
	}
	if n := len(env.ch.got); n != 0 {
		t.Errorf("%d more messages sent, want none", n)
	}
}

// Answered marks and origins survive a reload; a message recorded again
// with the same id while unanswered is not written twice.
func TestOriginAndAnsweredMarkReload(t *testing.T) {
	dir := t.TempDir()
	st, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := st.Get("test:c")
	o := session.Origin{Channel: "test", ChatID: "c", ThreadID: "t", MessageID: "m1", SenderID: "U1", SenderName: "ana"}
	msg := llm.Message{Role: llm.RoleUser, Content: "hi", Time: time.Now().UTC()}
	for i, want := range []bool{true, false} {
		wrote, err := s.AppendUser(msg, o)
		if err != nil || wrote != want {
			t.Fatalf("AppendUser #%d = %v, %v; want %v", i, wrote, err, want)
		}
	}
	st.Evict(s)
	st2, _ := session.NewStore(dir, nil)
	s2, _ := st2.Get("test:c")
	p, ok := s2.Pending()
	if !ok || p.Origin != o || p.Message.Content != "hi" || s2.Len() != 1 {
		t.Fatalf("after reload: pending %+v %v, %d messages", p, ok, s2.Len())
	}
	if err := s2.Append(llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s2.MarkAnswered(); err != nil {
		t.Fatal(err)
	}
	st2.Evict(s2)
	st3, _ := session.NewStore(dir, nil)
	s3, _ := st3.Get("test:c")
	if p, ok := s3.Pending(); ok || s3.Len() != 2 {
		t.Errorf("after the mark: pending %+v %v, %d messages (the mark is no message)", p, ok, s3.Len())
	}
	st3.Close()
}

// A message queued behind a running turn is only in memory; the inbox
// keeps it, so after a crash the next start answers it (and the one whose
// turn was running), each once.
func TestInboxAnswersQueuedMessagesAfterACrash(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	waiting := make(chan struct{}, 1)
	first := newInboxGateway(t, dir, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		select {
		case waiting <- struct{}{}:
		default:
		}
		select { // the crash comes while the first turn waits on the model
		case <-release:
		case <-ctx.Done():
		}
		return llm.Response{}, context.Canceled
	})
	t.Cleanup(func() { // before the temp dir goes: the first turn ends and writes
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = first.g.Shutdown(ctx)
	})
	a, b := inbound("c", "q1 first"), inbound("c", "q2 second")
	b.MessageID = a.MessageID + "b"
	if _, err := first.g.Submit(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := first.g.Submit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// The process dies here: nothing of the first gateway runs on. A dead
	// process holds no file and no session lock, so its store lets go of
	// them once its first turn has taken the session (and the lock).
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the first turn never reached the model")
	}
	if err := first.sessions.Close(); err != nil {
		t.Fatal(err)
	}

	second := newInboxGateway(t, dir, func(_ context.Context, req llm.Request) (llm.Response, error) {
		return textReply("answer: " + req.Messages[len(req.Messages)-1].Content), nil
	})
	second.g.answerPending()
	got := []string{second.ch.next(t).Text, second.ch.next(t).Text}
	if got[0] != "answer: q1 first" || got[1] != "answer: q2 second" {
		t.Errorf("answers after the restart = %q, want both messages answered in order", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := second.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	third := newInboxGateway(t, dir, func(context.Context, llm.Request) (llm.Response, error) {
		t.Error("a third start called the model")
		return textReply("again"), nil
	})
	third.g.answerPending()
	if n := len(third.ch.got); n != 0 {
		t.Errorf("a third start sent %d messages, want none", n)
	}
}

type inboxGateway struct {
	g        *Gateway
	ch       *recorder
	sessions *session.Store
}

func newInboxGateway(t *testing.T, dir string, f func(context.Context, llm.Request) (llm.Response, error)) inboxGateway {
	t.Helper()
	sessions, err := session.NewStore(dir+"/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sessions.Close() })
	g := New(Config{MaxToolIterations: 2, AnswerPending: 10 * time.Minute}, Deps{
		Model: llmtest.NewModel(t).Then(f), Sessions: sessions, Prompts: NewPromptBuilder(t.TempDir(), nil),
	})
	rec := newRecorder("test")
	g.AddChannel(rec)
	if err := g.OpenInbox(dir + "/inbox.jsonl"); err != nil {
		t.Fatal(err)
	}
	return inboxGateway{g: g, ch: rec, sessions: sessions}
}

// A platform delivers again what a killed process read but never acked;
// when the session holds it as answered, it is not answered twice.
func TestRedeliveredAnsweredMessageIgnored(t *testing.T) {
	calls := 0
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		calls++
		return textReply("ok"), nil
	}, nil)
	in := inbound("c", "hello")
	wait(t, mustSubmit(t, env, in))
	if res := wait(t, mustSubmit(t, env, in)); res.Reply != "" || res.Err != nil {
		t.Errorf("the delivery again got %+v, want nothing", res)
	}
	if calls != 1 || len(env.ch.got) != 1 {
		t.Errorf("%d model calls and %d messages sent, want 1 and 1", calls, len(env.ch.got))
	}
}
