package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func TestState(t *testing.T) {
	srv := llmtest.New(t)
	clock := testkit.NewClock(time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC))
	c := newClient(t, srv.URL(), func(c *llm.Config) {
		c.MaxTries = 1
		// A refused key is a failure of the model too (the one record
		// chains read), so the breaker opens at the third.
		c.BreakerThreshold = 3
	})
	llm.SetClock(c, clock.Now)
	if s := c.State(); s.Known || s.BreakerOpen || s.LastErrorClass != "" {
		t.Fatalf("before any call: %+v", s)
	}

	step := func(name string, reply llmtest.Reply, want llm.State) {
		t.Helper()
		srv.Push(reply)
		_, _ = c.Chat(t.Context(), userReq("hi"))
		got := c.State()
		got.LastCallAt, got.LastErrorAt = time.Time{}, time.Time{}
		if got != want {
			t.Errorf("%s: state %+v, want %+v", name, got, want)
		}
	}
	step("success", llmtest.Text("ok"), llm.State{Known: true, Reachable: true})
	step("rejected", llmtest.Status(401, ""), llm.State{Known: true, Reachable: true, LastErrorClass: llm.ClassRejected})
	step("503", llmtest.Status(503, ""), llm.State{Known: true, LastErrorClass: llm.ClassUnavailable})
	step("503 opens", llmtest.Status(503, ""), llm.State{Known: true, BreakerOpen: true, LastErrorClass: llm.ClassUnavailable})
	clock.Advance(time.Minute)
	step("trial closes", llmtest.Text("ok"), llm.State{Known: true, Reachable: true, LastErrorClass: llm.ClassUnavailable})
	if s := c.State(); !s.LastErrorAt.Equal(clock.Now().Add(-time.Minute)) {
		t.Errorf("LastErrorAt = %v, want the time of the last failure", s.LastErrorAt)
	}

	// A call its caller abandoned says nothing about the endpoint.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _ = c.Chat(ctx, userReq("hi"))
	if s := c.State(); !s.Reachable {
		t.Errorf("an abandoned call changed the state: %+v", s)
	}
}
