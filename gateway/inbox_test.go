package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// killedState writes what a killed process leaves of one message: its
// line in the inbox (answered or not), and in its session the message
// with its origin and maybe the turn's reply.
type killedState struct {
	t   *testing.T
	ib  *inbox
	st  *session.Store
	now time.Time
}

func newKilledState(t *testing.T, inboxPath string, st *session.Store) *killedState {
	t.Helper()
	ib, _, _, err := openInbox(inboxPath, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ib.close() })
	return &killedState{t: t, ib: ib, st: st, now: time.Now()}
}

func (k *killedState) message(key, msgID, text string, at time.Time, recorded bool, reply string) session.Origin {
	k.t.Helper()
	o := session.Origin{Channel: "test", ChatID: strings.TrimPrefix(key, "test:"), MessageID: msgID, SenderID: "U1"}
	if _, err := k.ib.accept(inboxLine{Key: key, Origin: o, Text: text, Time: at}); err != nil {
		k.t.Fatal(err)
	}
	if !recorded {
		return o
	}
	s, err := k.st.Get(key)
	if err != nil {
		k.t.Fatal(err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: text, Time: at}, o); err != nil {
		k.t.Fatal(err)
	}
	if reply != "" {
		if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: reply, Time: at}); err != nil {
			k.t.Fatal(err)
		}
	}
	k.st.Evict(s)
	return o
}

// At start the gateway answers what a crash left, from the inbox: a recent
// message gets a turn (recorded once), a recorded reply is sent without a
// model call, an old message is asked for again, an answered one and one a
// later turn followed are left alone, and no second start answers any of
// them again.
func TestAnswerPendingAtStart(t *testing.T) {
	now := time.Now()
	calls := 0
	env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		calls++
		return textReply("answer: " + llmtest.Spoken(req.Messages[len(req.Messages)-1].Content)), nil
	}, func(cfg *Config, _ *Deps) { cfg.AnswerPending = 10 * time.Minute })
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	st := env.sessions
	k := newKilledState(t, path, st)
	k.message("test:recent", "m1", "recent question", now.Add(-time.Minute), true, "")
	k.message("test:replied", "m2", "replied question", now.Add(-time.Minute), true, "the recorded reply")
	k.message("test:old", "m3", "old question", now.Add(-time.Hour), true, "")
	done := k.message("test:done", "m4", "done question", now.Add(-time.Minute), true, "done reply")
	if err := k.ib.answer(done, now); err != nil {
		t.Fatal(err)
	}
	k.message("test:followed", "m5", "followed question", now.Add(-2*time.Minute), true, "")
	k.message("test:followed", "m6", "the next question", now.Add(-time.Minute), true, "the next reply")
	k.ib.answer(session.Origin{Channel: "test", MessageID: "m6"}, now)
	k.ib.close()

	if err := env.g.OpenInbox(path); err != nil {
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
	// Each may have been posted by the process that died: the adapter
	// looks for its parts before posting them.
	for key, o := range got {
		if o.Key == "" || o.Key != channels.AnswerKey(inboundOf(key, session.Origin{Channel: "test", ChatID: o.ChatID, MessageID: o.ReplyTo}, "", now)) || !o.Again {
			t.Errorf("%s answered under key %q, again %v; want its answer key, sent again", key, o.Key, o.Again)
		}
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
	if n := len(env.ch.got); n != 0 {
		t.Errorf("%d more messages sent, want none", n)
	}
	_, left, _, err := openInbox(path, time.Now())
	if err != nil || len(left) != 0 {
		t.Errorf("after the start the inbox still holds %+v (%v)", left, err)
	}
}

// A platform delivering again a message a previous process accepted is
// ignored, whether it was answered (the inbox remembers it) or is being
// answered after the restart.
func TestInboxIgnoresADeliveryAgainAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	first := newInboxGateway(t, dir, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("first answer"), nil
	})
	in := inbound("c", "hello")
	if r := wait(t, must(first.g.Submit(t.Context(), in))); r.Reply != "first answer" {
		t.Fatalf("first delivery: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	first.sessions.Close()

	second := newInboxGateway(t, dir, func(context.Context, llm.Request) (llm.Response, error) {
		t.Error("a message answered before reached the model again")
		return textReply("again"), nil
	})
	second.g.answerPending()
	if r := wait(t, must(second.g.Submit(t.Context(), in))); r.Reply != "" || r.Err != nil {
		t.Errorf("the delivery again got %+v, want nothing", r)
	}
	if n := len(second.ch.got); n != 0 {
		t.Errorf("%d messages sent for a delivery again, want none", n)
	}
}

// The inbox file stays bounded by what it must keep, and its open messages
// keep the order they came in through every rewrite and reopen; answers
// are forgotten after keepAnswered.
func TestInboxStaysBoundedAndInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	now := time.Now()
	ib, _, legacy, err := openInbox(path, now)
	if err != nil || !legacy {
		t.Fatalf("a missing inbox: legacy %v, err %v; want legacy (an earlier version may have left sessions)", legacy, err)
	}
	const n = 3000
	for i := range n {
		o := session.Origin{Channel: "test", MessageID: fmt.Sprint(i)}
		if _, err := ib.accept(inboxLine{Key: "test:k", Origin: o, Text: fmt.Sprint("q", i), Time: now}); err != nil {
			t.Fatal(err)
		}
		if i%1000 != 7 {
			if err := ib.answer(o, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	ib.close()
	_, left, legacy, err := openInbox(path, now.Add(keepAnswered/2))
	if err != nil || legacy {
		t.Fatalf("reopen: legacy %v, err %v", legacy, err)
	}
	var ids []string
	for _, l := range left {
		ids = append(ids, l.Origin.MessageID)
	}
	if strings.Join(ids, ",") != "7,1007,2007" {
		t.Errorf("open after reopening: %v, want 7, 1007, 2007 in order", ids)
	}
	later, _, _, err := openInbox(path, now.Add(keepAnswered+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer later.close()
	if len(later.answered) != 0 {
		t.Errorf("%d answers remembered past keepAnswered", len(later.answered))
	}
	raw, _ := os.ReadFile(path)
	if lines := bytes.Count(raw, []byte("\n")); lines != 4 {
		t.Errorf("the inbox holds %d lines once answers are forgotten, want the header and 3 open messages:\n%s", lines, raw)
	}
}

// An inbox of an earlier version (no header; a message dropped from it
// once its session held it, answers marked in the session file) is taken
// over once: what that version left unanswered is answered, what it
// answered is not.
func TestInboxTakesOverAnEarlierVersion(t *testing.T) {
	dir := t.TempDir()
	sessions, err := session.NewStore(filepath.Join(dir, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	origin := func(id string) session.Origin {
		return session.Origin{Channel: "test", ChatID: "c", MessageID: id, SenderID: "U1"}
	}
	record := func(key, id, text string, answered bool) {
		s, err := sessions.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: text, Time: now.Add(-time.Minute)}, origin(id)); err != nil {
			t.Fatal(err)
		}
		if answered {
			if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "old answer"}); err != nil {
				t.Fatal(err)
			}
		}
		sessions.Evict(s)
	}
	record("test:a", "a1", "answered before", true)
	record("test:b", "b1", "left in its turn", false)
	// The earlier version's answered mark after test:a's reply.
	markAnswered := func(key string) {
		path := filepath.Join(dir, "sessions", base64Key(key)+".jsonl")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "{\"answered\":true,\"timestamp\":%q}\n", now.Format(time.RFC3339Nano))
		f.Close()
	}
	markAnswered("test:a")
	// Its inbox: a message still queued, and a stale line for test:a's
	// message (its session holds it; it was answered).
	var old bytes.Buffer
	for _, l := range []inboxLine{
		{Key: "test:a", Origin: origin("a1"), Text: "answered before", Time: now.Add(-time.Minute)},
		{Key: "test:c", Origin: origin("c1"), Text: "still queued", Time: now.Add(-time.Minute)},
	} {
		b, _ := json.Marshal(l)
		old.Write(append(b, '\n'))
	}
	testkit.WriteFile(t, dir, "inbox.jsonl", old.String())
	sessions.Close()

	second := newInboxGateway(t, dir, func(_ context.Context, req llm.Request) (llm.Response, error) {
		return textReply("answer: " + llmtest.Spoken(req.Messages[len(req.Messages)-1].Content)), nil
	})
	second.g.answerPending()
	got := map[string]string{}
	for range 2 {
		o := second.ch.next(t)
		got[o.SessionKey] = o.Text
	}
	if got["test:b"] != "answer: left in its turn" || got["test:c"] != "answer: still queued" {
		t.Errorf("after taking over: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := second.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(second.ch.got); n != 0 {
		t.Errorf("%d more messages sent (an answered one again?)", n)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "inbox.jsonl"))
	if !bytes.HasPrefix(raw, []byte(`{"inbox":2}`)) {
		t.Errorf("the inbox was not taken over to the current format:\n%s", raw)
	}
}

func base64Key(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

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
		return textReply("answer: " + llmtest.Spoken(req.Messages[len(req.Messages)-1].Content)), nil
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
		Model: llmtest.NewModel(t).Then(f), Sessions: sessions, Prompts: NewPromptBuilder(t.TempDir(), nil, nil),
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
