package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The breaker: a client called with no other model fails fast once
// BreakerThreshold calls in a row failed, until its cooldown ends; then
// one trial decides. No sleep: the clock is moved.
func TestBreaker(t *testing.T) {
	srv := llmtest.New(t)
	clock := testkit.NewClock(time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC))
	c := newClient(t, srv.URL(), func(c *llm.Config) {
		c.MaxTries = 1
		c.BreakerThreshold = 2
		c.BreakerCooldown = 30 * time.Second
	})
	llm.SetClock(c, clock.Now)
	ctx := t.Context()

	step := func(name string, wantErr error, wantReason string, wantReqs int) {
		t.Helper()
		_, err := c.Chat(ctx, userReq("hi"))
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%s: Chat: %v", name, err)
		case wantErr != nil:
			checkError(t, err, wantErr, 0, wantReason)
		}
		if n := len(srv.Requests()); n != wantReqs {
			t.Fatalf("%s: server saw %d requests, want %d", name, n, wantReqs)
		}
	}

	srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
	step("first failure", llm.ErrUnavailable, "HTTP 503", 1)
	step("second failure opens", llm.ErrUnavailable, "HTTP 503", 2)
	step("open fails fast", llm.ErrUnavailable, "HTTP 503 after 1 try (too many failures in a row; next try in 30s)", 2)
	clock.Advance(20 * time.Second)
	step("still open", llm.ErrUnavailable, "next try in 10s", 2)

	clock.Advance(11 * time.Second)
	step("failed trial re-opens", llm.ErrUnavailable, "HTTP 503", 3)
	// The cooldown doubles at each one in a row, as chains pass it over.
	step("re-opened for twice as long", llm.ErrUnavailable, "next try in 60s", 3)

	// A trial in flight: others fail fast; an abandoned trial decides nothing.
	clock.Advance(61 * time.Second)
	srv.Push(llmtest.Slow(time.Hour, llmtest.Text("late")))
	trialCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat(trialCtx, userReq("hi"))
		done <- err
	}()
	if _, err := srv.WaitRequests(ctx, 4); err != nil {
		t.Fatal(err)
	}
	step("during the trial", llm.ErrUnavailable, "a trial call is under way", 4)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned trial: %v", err)
	}

	srv.SetResponder(nil) // Text("ok")
	step("successful trial closes", nil, "", 5)
	step("closed", nil, "", 6)

	// Rejections reach the server: they neither count nor keep a run going.
	srv.Push(llmtest.Status(503, ""), llmtest.Status(400, ""), llmtest.Status(503, ""))
	step("503", llm.ErrUnavailable, "HTTP 503", 7)
	step("400", llm.ErrRejected, "HTTP 400", 8)
	step("503 again", llm.ErrUnavailable, "HTTP 503", 9)
	step("still closed", nil, "", 10)
}
