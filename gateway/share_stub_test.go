package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
)

// stubClaims is the claims of a store where another process may hold a
// conversation (elsewhere), for tests of sharing's rules without a
// database: Claim of a conversation held elsewhere is refused and said
// on refused; waiting are the inbox's open messages by conversation.
type stubClaims struct {
	mu        sync.Mutex
	elsewhere map[string]bool
	mine      map[string]bool
	waiting   map[string][]store.InboxMessage
	refused   chan string
	wake      chan string
	looked    chan time.Duration // each look for work, by its grace
	releases  []string
	let       chan string // each release, when set (never blocks)
	claimable []string    // what the next look for work finds
	lost      chan struct{}
}

func newStubClaims() *stubClaims {
	return &stubClaims{
		elsewhere: map[string]bool{}, mine: map[string]bool{}, waiting: map[string][]store.InboxMessage{},
		refused: make(chan string, 64), wake: make(chan string, 64), lost: make(chan struct{}),
	}
}

func (c *stubClaims) Claim(key string) (bool, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.elsewhere[key] {
		c.refused <- key
		return false, false, nil
	}
	c.mine[key] = true
	return true, false, nil
}

func (c *stubClaims) Release(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mine, key)
	c.releases = append(c.releases, key)
	select {
	case c.let <- key:
	default:
	}
	return nil
}

// released counts the releases of key.
func (c *stubClaims) released(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.releases {
		if k == key {
			n++
		}
	}
	return n
}

func (c *stubClaims) HeldElsewhere(key string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elsewhere[key], nil
}

func (c *stubClaims) Waiting(key string) ([]store.InboxMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]store.InboxMessage(nil), c.waiting[key]...), nil
}

func (c *stubClaims) Claimable(_ []string, unclaimed time.Duration, _ int) ([]string, error) {
	if c.looked != nil {
		c.looked <- unclaimed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := c.claimable
	c.claimable = nil
	return keys, nil
}
func (c *stubClaims) Notify(string) error   { return nil }
func (c *stubClaims) Wake() <-chan string   { return c.wake }
func (c *stubClaims) Lost() <-chan struct{} { return c.lost }

// letGo is the other process letting key go, and saying so.
func (c *stubClaims) letGo(key string) {
	c.mu.Lock()
	delete(c.elsewhere, key)
	c.mu.Unlock()
	c.wake <- key
}

// failingInbox is a store.Inbox whose Accept fails (the database did not
// answer in time).
type failingInbox struct{}

func (failingInbox) Accept(store.InboxMessage) (bool, error) {
	return false, errors.New("record an accepted message: timeout")
}
func (failingInbox) Answer(string, string, time.Time) error { return nil }
func (failingInbox) Open() ([]store.InboxMessage, error)    { return nil, nil }
func (failingInbox) Forget(time.Time) error                 { return nil }

// runShared runs env's gateway sharing conversations over c.
func runShared(t *testing.T, env *testEnv, c Claims) {
	t.Helper()
	env.g.ShareConversations(c, ShareOptions{Sweep: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = env.g.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
}

// A message the inbox could not record is not in the inbox for the
// process holding its conversation to find: it is not left to that
// process, but waits here for the claim and is answered (it was dropped,
// unanswered, when another process held the conversation).
func TestUnrecordedMessageWaitsForTheClaim(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("answered here"), nil
	}, nil)
	if err := env.g.OpenInboxIn(failingInbox{}); err != nil {
		t.Fatal(err)
	}
	c := newStubClaims()
	c.elsewhere["test:c1"] = true
	runShared(t, env, c)
	done, err := env.g.Submit(context.Background(), inbound("c1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if key := <-c.refused; key != "test:c1" {
		t.Fatalf("claimed %q", key)
	}
	c.letGo("test:c1")
	if res := wait(t, done); res.Reply != "answered here" {
		t.Fatalf("result %+v: the message was left to a process that cannot see it", res)
	}
}

// A conversation another process left to the others (it held its share)
// is looked for without the receiver's grace by a process that had no
// room when told, once it has room: it was left waiting the grace (two
// sweeps, ten seconds at the default lease) while the process that left
// it, stuck, answered nothing — a takeover took 15 s where it takes one
// sweep.
func TestConversationLeftToOthersIsTakenOnceThereIsRoom(t *testing.T) {
	release := make(chan struct{})
	env := newTestEnv(t, func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		<-release
		return textReply("done"), nil
	}, nil)
	if err := env.g.OpenInboxIn(failingInbox{}); err != nil {
		t.Fatal(err)
	}
	c := newStubClaims()
	c.wake = make(chan string) // unbuffered: a send returns once the loop has it
	c.looked = make(chan time.Duration, 16)
	env.g.ShareConversations(c, ShareOptions{MaxConversations: 1, Sweep: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = env.g.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
	<-c.looked // the loop's first look, at start
	done, err := env.g.Submit(context.Background(), inbound("c1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	waitHolding(t, env.g, 1)
	c.wake <- "" // another process left a conversation to the others; no room here
	// The loop looks for work after each wake, before it reads the next:
	// once this one is read, that look, with no room, is over.
	c.wake <- "another process let a conversation go"
	close(release)
	wait(t, done)
	if grace := <-c.looked; grace != 0 {
		t.Fatalf("looked for work with a grace of %v once there was room; the conversation left to the others waits it out", grace)
	}
}

// waitHolding waits until g holds n conversations.
func waitHolding(t *testing.T, g *Gateway, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for g.share.holding() != n {
		select {
		case <-deadline:
			t.Fatalf("holding %d conversations, want %d", g.share.holding(), n)
		case <-time.After(time.Millisecond):
		}
	}
}

// gatedClaims are stubClaims whose Claim waits at a gate: the claims a
// process is taking are all in flight at once.
type gatedClaims struct {
	*stubClaims
	gate    chan struct{}
	entered chan string // each claim that reached the gate, when set
}

func (c gatedClaims) Claim(key string) (bool, bool, error) {
	if c.entered != nil {
		c.entered <- key
	}
	<-c.gate
	return c.stubClaims.Claim(key)
}

// A process holds at most MaxConversations, however many of its
// conversations try to take their claims at once: those beyond its share
// are left to the others (their messages are in the inbox) while the
// first claim is still being taken. Each checked the count before its
// claim and none counted the others in flight, so a process took six
// conversations with a share of four.
func TestShareHoldsWhileClaimsAreInFlight(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("answered"), nil
	}, nil)
	c := gatedClaims{stubClaims: newStubClaims(), gate: make(chan struct{})}
	if err := env.g.OpenInboxIn(&waitingInbox{c: c.stubClaims}); err != nil {
		t.Fatal(err)
	}
	open := sync.OnceFunc(func() { close(c.gate) })
	env.g.ShareConversations(c, ShareOptions{MaxConversations: 1, Sweep: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = env.g.Run(ctx); close(ran) }()
	t.Cleanup(func() { open(); cancel(); <-ran })
	results := make(chan Result, 3)
	for _, conv := range []string{"c1", "c2", "c3"} {
		done, err := env.g.Submit(context.Background(), inbound(conv, "hello"))
		if err != nil {
			t.Fatal(err)
		}
		go func() { results <- <-done }()
	}
	for range 2 {
		if res := wait(t, results); res.Reply != "" {
			t.Fatalf("answered %q while the first claim was in flight", res.Reply)
		}
	}
	open()
	if res := wait(t, results); res.Reply != "answered" {
		t.Fatalf("the conversation claimed was answered %q", res.Reply)
	}
}

// A /stop asks the process holding the conversation, when another does,
// without taking or letting go of the claim itself: it took the claim to
// see whether it was free and let it go, and so let go of the claim this
// process's own worker was taking at that moment (the worker then went on
// believing it held the conversation, beside whichever process took it
// next).
func TestStopLeavesTheClaimAlone(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("answered"), nil
	}, nil)
	c := gatedClaims{stubClaims: newStubClaims(), gate: make(chan struct{}), entered: make(chan string, 4)}
	c.claimable = []string{"test:c1"} // a conversation nobody holds: a worker takes it
	open := sync.OnceFunc(func() { close(c.gate) })
	env.g.ShareConversations(c, ShareOptions{Sweep: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = env.g.Run(ctx); close(ran) }()
	t.Cleanup(func() { open(); cancel(); <-ran })
	<-c.entered // the worker is taking the claim
	stop, err := env.g.Submit(context.Background(), inbound("c1", "/stop"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.entered:
		open()
		wait(t, stop)
		t.Fatal("/stop took the conversation's claim itself, to see whether another process held it")
	case <-stop:
	case <-time.After(10 * time.Second):
		t.Fatal("no result of /stop within 10s")
	}
	open()
	deadline := time.After(10 * time.Second)
	for c.released("test:c1") == 0 || env.g.queued("test:c1") > 0 || hasWorker(env.g, "test:c1") {
		select {
		case <-deadline:
			t.Fatal("the worker never let the conversation go")
		case <-time.After(time.Millisecond):
		}
	}
	if n := c.released("test:c1"); n != 1 {
		t.Fatalf("the conversation's claim was let go %d times, want once, by the worker that took it", n)
	}
}

func hasWorker(g *Gateway, key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.workers[key] != nil
}

// lettingGo are stubClaims whose holder lets the conversation go just as
// this process's claim is refused: the release is told (and the loop has
// passed it on) before Claim returns.
type lettingGo struct{ *stubClaims }

func (c lettingGo) Claim(key string) (bool, bool, error) {
	ok, over, err := c.stubClaims.Claim(key)
	if !ok {
		c.mu.Lock()
		delete(c.elsewhere, key)
		c.mu.Unlock()
		c.wake <- key
		c.wake <- stopPrefix + "another" // read once the loop passed the first on; wakes nobody
	}
	return ok, over, err
}

// A conversation let go between this process's refused claim and its wait
// for the claim is taken at once: the wait missed that release and slept
// until the next sweep (5 s by default, an hour here).
func TestReleaseJustAfterARefusedClaimIsNotMissed(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("answered here"), nil
	}, nil)
	if err := env.g.OpenInboxIn(failingInbox{}); err != nil {
		t.Fatal(err)
	}
	c := lettingGo{newStubClaims()}
	c.wake = make(chan string) // unbuffered: a send returns once the loop has it
	c.elsewhere["test:c1"] = true
	runShared(t, env, c)
	done, err := env.g.Submit(context.Background(), inbound("c1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if res := wait(t, done); res.Reply != "answered here" {
		t.Fatalf("result %+v", res)
	}
}
