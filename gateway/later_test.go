package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/internal/pgtest"
)

// heldDreamer is a Dream that waits for release (or its context), counting
// its runs.
type heldDreamer struct {
	blockingDreamer
	runs    atomic.Int32
	release chan struct{}
}

func (d *heldDreamer) Run(ctx context.Context, _ string, _ dream.Scopes, _ func(string)) (dream.Report, error) {
	if d.runs.Add(1) == 1 {
		close(d.started)
	}
	select {
	case <-d.release:
		return dream.Report{Outcome: dream.OutcomeNothingNew}, nil
	case <-ctx.Done():
		return dream.Report{Outcome: dream.OutcomeFailed, Reason: "the Dream was cancelled"}, ctx.Err()
	}
}

// to returns the answers to the message id.
func (a *answers) to(id string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.by[id]...)
}

// waitAnswered waits until the message id has an answer.
func waitAnswered(t *testing.T, got *answers, id string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if len(got.to(id)) > 0 {
			return
		}
		select {
		case <-got.ch:
		case <-deadline:
			t.Fatalf("%s was never answered", id)
		}
	}
}

// A /dream answers from the background, and stays unanswered in the inbox
// until its Dream ends (so a restart runs it again). With two processes
// sharing the conversations, the one running it keeps the conversation
// meanwhile: the conversation goes on there (a message the other process
// receives is answered by it), and neither process runs the command a
// second time, as it would if the conversation were let go with the
// command waiting.
func TestPostgresDreamCommandKeepsItsConversation(t *testing.T) {
	dsn := pgtest.DSN(t)
	got := newAnswers()
	a, b := startShared(t, dsn, "a", got, nil), startShared(t, dsn, "b", got, nil)
	d := &heldDreamer{blockingDreamer: blockingDreamer{started: make(chan struct{})}, release: make(chan struct{})}
	a.env.g.deps.Dream, b.env.g.deps.Dream = d, d
	cmd := inbound("c", "/dream")
	cmd.MessageID = "d1"
	if _, err := a.env.g.Submit(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.started:
	case <-time.After(60 * time.Second):
		t.Fatal("the Dream never started")
	}
	chat := inbound("c", "hello")
	chat.MessageID = "m2"
	if _, err := b.env.g.Submit(context.Background(), chat); err != nil {
		t.Fatal(err)
	}
	waitAnswered(t, got, "m2")
	if m2 := got.to("m2"); len(m2) != 1 || m2[0] != "a:a saw 1" {
		t.Errorf("the message during the Dream was answered %v, want once by a, which holds the conversation", m2)
	}
	if sh, _ := a.env.g.Shared(); sh.Claims[cmd.SessionKey].IsZero() {
		t.Errorf("a let the conversation go while its /dream ran: it holds %v", sh.Claims)
	}
	close(d.release)
	waitAnswered(t, got, "d1")
	if d1 := got.to("d1"); len(d1) != 1 || d1[0][:2] != "a:" {
		t.Errorf("/dream answered %v, want once by a", d1)
	}
	if n := d.runs.Load(); n != 1 {
		t.Errorf("the Dream ran %d times, want once", n)
	}
}
