package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
)

// waitingInbox is a store.Inbox whose open messages are stubClaims'
// waiting ones, as on a shared database: what Accept records, the
// conversation's holder finds at once. Accept of a message starting with
// hold (when set) records it, says so on recorded, and returns only once proceed is
// closed — the moment between the inbox's commit and Submit's queueing.
type waitingInbox struct {
	c        *stubClaims
	hold     string
	recorded chan struct{}
	proceed  chan struct{}
	once     sync.Once
}

func (i *waitingInbox) Accept(m store.InboxMessage) (bool, error) {
	i.c.mu.Lock()
	i.c.waiting[m.Conversation] = append(i.c.waiting[m.Conversation], m)
	i.c.mu.Unlock()
	if i.hold != "" && strings.HasPrefix(m.Text, i.hold) {
		i.once.Do(func() { close(i.recorded) })
		<-i.proceed
	}
	return false, nil
}

func (i *waitingInbox) Answer(channel, messageID string, _ time.Time) error {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	for key, ms := range i.c.waiting {
		var kept []store.InboxMessage
		for _, m := range ms {
			if m.Channel != channel || m.MessageID != messageID {
				kept = append(kept, m)
			}
		}
		i.c.waiting[key] = kept
	}
	return nil
}

func (i *waitingInbox) Open() ([]store.InboxMessage, error) { return nil, nil }
func (i *waitingInbox) Forget(time.Time) error              { return nil }

// A command recorded in the shared inbox can be found there by its
// conversation's worker (looking for more between turns) before Submit
// queues it: the worker answers it from the inbox, and the job Submit
// queues next must not answer it again. It did: the claim's reordering
// kept a queued job missing from the inbox's open messages ("not yet in
// its view"), so /help, /dream-log or /why was answered twice (seen
// through the binary on PostgreSQL: a DM's /why got two replies).
func TestCommandFoundWaitingIsNotAnsweredTwice(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		<-release
		return textReply("hello there"), nil
	}, nil)
	c := newStubClaims()
	c.let = make(chan string, 16)
	ib := &waitingInbox{c: c, hold: "/help", recorded: make(chan struct{}), proceed: make(chan struct{})}
	if err := env.g.OpenInboxIn(ib); err != nil {
		t.Fatal(err)
	}
	runShared(t, env, c)

	hello, err := env.g.Submit(context.Background(), inbound("c1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	waitHolding(t, env.g, 1) // the turn runs, held by the model
	help := make(chan (<-chan Result), 1)
	go func() {
		done, err := env.g.Submit(context.Background(), inbound("c1", "/help"))
		if err != nil {
			t.Error(err)
		}
		help <- done
	}()
	<-ib.recorded
	close(release) // the turn ends; the worker looks in the inbox and finds /help
	wait(t, hello)
	first := env.ch.next(t) // the turn's reply
	if first.Text != "hello there" {
		t.Fatalf("first post %q", first.Text)
	}
	if reply := env.ch.next(t); !strings.Contains(reply.Text, "/dream") {
		t.Fatalf("second post %q, want /help's answer", reply.Text)
	}
	close(ib.proceed) // only now does Submit queue /help's job
	wait(t, <-help)
	// Whatever runs after the job's result is sent runs before the
	// worker lets the conversation go; once it has, nothing more comes.
	select {
	case <-c.let:
	case <-time.After(10 * time.Second):
		t.Fatal("the conversation was never let go")
	}
	env.ch.mu.Lock()
	defer env.ch.mu.Unlock()
	if n := len(env.ch.sent); n != 2 {
		var texts []string
		for _, o := range env.ch.sent {
			texts = append(texts, o.Text)
		}
		t.Fatalf("%d posts, want the turn's reply and /help's answer once: %q", n, texts)
	}
}
