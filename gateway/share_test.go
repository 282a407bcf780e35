package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/jackc/pgx/v5"
)

// sharedProc is one gateway process of a pair sharing conversations on a
// real PostgreSQL (each with its own database handle, as processes have).
type sharedProc struct {
	name string
	dsn  string
	env  *testEnv
	db   *postgres.DB
	proc *postgres.Process
	stop context.CancelFunc
	ran  chan struct{}
}

// answers records every answer the pair sends, in order, by message.
type answers struct {
	mu  sync.Mutex
	by  map[string][]string // message id -> "<process>:<text>"
	all []channels.Outbound
	ch  chan struct{}
}

func (a *answers) add(proc string, o channels.Outbound) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.by[o.ReplyTo] = append(a.by[o.ReplyTo], proc+":"+o.Text)
	a.all = append(a.all, o)
	select {
	case a.ch <- struct{}{}:
	default:
	}
}

// wait waits until n messages have an answer.
func (a *answers) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		a.mu.Lock()
		got := len(a.by)
		a.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-a.ch:
		case <-deadline:
			t.Fatalf("%d of %d messages answered", got, n)
		}
	}
}

// startShared starts a gateway process sharing dsn's conversations whose
// model answers through answer (nil: "<name> saw N" with the count of
// the conversation's user messages it was shown).
func startShared(t *testing.T, dsn, name string, got *answers, answer func(ctx context.Context, req llm.Request) (llm.Response, error)) *sharedProc {
	return startSharedWith(t, dsn, name, got, answer, ShareOptions{Sweep: 50 * time.Millisecond})
}

// startSharedWith is startShared with sharing's options.
func startSharedWith(t *testing.T, dsn, name string, got *answers, answer func(ctx context.Context, req llm.Request) (llm.Response, error), o ShareOptions) *sharedProc {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// The default lease: a 1 s one gave the connection check a third of a
	// second, which a loaded machine can miss, and the live process then
	// let its conversations go. A kill ends the connection at once.
	proc, err := db.Join(context.Background(), postgres.ProcessInfo{Host: name, PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Close)
	if answer == nil {
		answer = func(_ context.Context, req llm.Request) (llm.Response, error) {
			users := 0
			for _, m := range req.Messages {
				if m.Role == llm.RoleUser {
					users++
				}
			}
			return textReply(fmt.Sprintf("%s saw %d", name, users)), nil
		}
	}
	env := newTestEnv(t, answer, func(_ *Config, d *Deps) {
		d.Sessions = session.NewStoreOn(db.Conversations(), nil)
	})
	env.g.cfg.AnswerPending = time.Hour
	if err := env.g.OpenInboxIn(db.Inbox("inbox")); err != nil {
		t.Fatal(err)
	}
	env.g.ShareConversations(proc, o)
	p := &sharedProc{name: name, dsn: dsn, env: env, db: db, proc: proc, ran: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() { _ = env.g.Run(ctx); close(p.ran) }()
	t.Cleanup(func() { cancel(); <-p.ran })
	go func() {
		for o := range env.ch.got {
			got.add(name, o)
		}
	}()
	return p
}

func newAnswers() *answers { return &answers{by: map[string][]string{}, ch: make(chan struct{}, 1)} }

// Two processes share the conversations: each message, whichever process
// received it, is answered once, in order within its conversation (each
// turn shown every earlier one). Which process answers which is the
// scheduling's business (TestPostgresConversationGoesToAProcessWithRoom
// pins the spreading).
func TestPostgresSharedConversationsAnsweredOnceInOrder(t *testing.T) {
	dsn := pgtest.DSN(t)
	got := newAnswers()
	procs := []*sharedProc{startShared(t, dsn, "a", got, nil), startShared(t, dsn, "b", got, nil)}
	const convs, each = 10, 4
	var wg sync.WaitGroup
	for c := range convs {
		wg.Go(func() {
			for k := range each {
				in := inbound(fmt.Sprintf("c%d", c), fmt.Sprintf("c%d m%d", c, k))
				in.MessageID = fmt.Sprintf("c%d-m%d", c, k)
				// Alternate receivers, as Slack spreads a conversation's
				// events over the connections.
				if _, err := procs[(c+k)%2].env.g.Submit(context.Background(), in); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got.wait(t, convs*each)
	for c := range convs {
		for k := range each {
			id := fmt.Sprintf("c%d-m%d", c, k)
			a := got.by[id]
			if len(a) != 1 {
				t.Errorf("%s answered %d times: %v", id, len(a), a)
				continue
			}
			proc, text, _ := strings.Cut(a[0], ":")
			if want := fmt.Sprintf("%s saw %d", proc, k+1); text != want {
				t.Errorf("%s answered %q, want %q: the turn did not see every earlier one", id, text, want)
			}
		}
	}
}

// A process holding its share of conversations (MaxConversations) leaves
// a conversation it receives to the others: a, whose one conversation
// waits in its model, receives a message of another conversation, which
// b answers.
func TestPostgresConversationGoesToAProcessWithRoom(t *testing.T) {
	dsn := pgtest.DSN(t)
	got := newAnswers()
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	defer close(gate)
	a := startSharedWith(t, dsn, "a", got, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return textReply("a answered"), nil
	}, ShareOptions{MaxConversations: 1, Sweep: 50 * time.Millisecond})
	startShared(t, dsn, "b", got, nil)
	busy := inbound("busy", "a long question")
	busy.MessageID = "m1"
	if _, err := a.env.g.Submit(context.Background(), busy); err != nil {
		t.Fatal(err)
	}
	<-started // a holds "busy", its one conversation
	other := inbound("other", "hello")
	other.MessageID = "m2"
	if _, err := a.env.g.Submit(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	got.wait(t, 1)
	if m2 := got.by["m2"]; len(m2) != 1 || m2[0] != "b:b saw 1" {
		t.Fatalf("the other conversation was answered %v, want by b", m2)
	}
}

// A process that loses its connection to the store loses its claims: the
// turn it was running ends unanswered there, and the other process takes
// the conversation over and answers its messages once, in order.
func TestPostgresLostProcessConversationIsTakenOver(t *testing.T) {
	dsn := pgtest.DSN(t)
	got := newAnswers()
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	a := startShared(t, dsn, "a", got, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		return textReply("a answered"), nil
	})
	defer close(gate)
	first := inbound("c", "first")
	first.MessageID = "m1"
	if _, err := a.env.g.Submit(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	<-started // a holds the conversation, its turn in the model
	b := startShared(t, dsn, "b", got, nil)
	second := inbound("c", "second")
	second.MessageID = "m2"
	if _, err := b.env.g.Submit(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	// a's connections end, as a dead process's do.
	killBackend(t, a)
	got.wait(t, 2)
	if m1, m2 := got.by["m1"], got.by["m2"]; len(m1) != 1 || len(m2) != 1 || m1[0] != "b:b saw 1" || m2[0] != "b:b saw 2" {
		t.Fatalf("answers: m1 %v, m2 %v; want b to answer both, in order", m1, m2)
	}
	if o := got.all[0]; !o.Again {
		t.Errorf("the taken-over message was not sent as possibly posted before: %+v", o)
	}
	if sh, _ := b.env.g.Shared(); sh.Takeovers != 1 {
		t.Errorf("b counted %d takeovers, want 1", sh.Takeovers)
	}
}

// killBackend ends p's connections from the server's side.
func killBackend(t *testing.T, p *sharedProc) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The backend holding the process's lock in this test's schema: a
	// process of the same number in another schema (another package's
	// test, on the same server) is not this one.
	if _, err := conn.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND objid = $1::bigint::oid
		AND classid = (hashtext('dreamgate process ' || current_schema()) & 2147483647)::integer::oid
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, p.proc.ID()); err != nil {
		t.Fatal(err)
	}
}

// /stop received by one process stops the turn another process is running
// in that conversation.
func TestPostgresStopReachesTheProcessAnswering(t *testing.T) {
	dsn := pgtest.DSN(t)
	got := newAnswers()
	started := make(chan struct{}, 1)
	a := startShared(t, dsn, "a", got, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		started <- struct{}{}
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	})
	b := startShared(t, dsn, "b", got, nil)
	first := inbound("c", "a long question")
	first.MessageID = "m1"
	if _, err := a.env.g.Submit(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	<-started
	stop := inbound("c", "/stop")
	stop.MessageID = "m2"
	done, err := b.env.g.Submit(context.Background(), stop)
	if err != nil {
		t.Fatal(err)
	}
	if res := wait(t, done); !strings.Contains(res.Reply, "Asked the dreamgate process") {
		t.Errorf("/stop in b answered %q", res.Reply)
	}
	got.wait(t, 2)
	if m1 := got.by["m1"]; len(m1) != 1 || m1[0] != "a:Stopped." {
		t.Errorf("the running turn answered %v, want a's \"Stopped.\"", m1)
	}
}
