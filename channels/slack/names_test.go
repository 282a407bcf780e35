package slack

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// Senders arrive with the name Slack shows for them, looked up once per
// user; without users:read they stay known by id, said once in the log.
func TestSenderNames(t *testing.T) {
	t.Run("looked up once", func(t *testing.T) {
		h := startHarness(t, harnessOpts{fake: fakeslack.Config{Users: map[string]string{"U1": "Ana"}}})
		h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "hi"})
		h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "again"})
		h.inject(fakeslack.Event{Channel: "D1", User: "U2", Text: "who am I?"})
		for _, want := range []struct{ id, name string }{{"U1", "Ana"}, {"U1", "Ana"}, {"U2", ""}} {
			if in := h.sink.next(t); in.SenderID != want.id || in.SenderName != want.name {
				t.Errorf("sender = %s %q, want %s %q", in.SenderID, in.SenderName, want.id, want.name)
			}
		}
		if n := h.fake.CallCount("users.info"); n != 2 {
			t.Errorf("users.info called %d times, want once per user", n)
		}
	})
	t.Run("no scope", func(t *testing.T) {
		var logs lockedBuffer
		h := startHarness(t, harnessOpts{
			fake:     fakeslack.Config{Users: map[string]string{"U1": "Ana"}, NoUsersScope: true},
			logTo:    &logs,
			logLevel: slog.LevelInfo,
		})
		h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "hi"})
		h.inject(fakeslack.Event{Channel: "D1", User: "U2", Text: "hi"})
		for range 2 {
			if in := h.sink.next(t); in.SenderName != "" {
				t.Errorf("sender name %q without users:read", in.SenderName)
			}
		}
		if n := h.fake.CallCount("users.info"); n != 1 {
			t.Errorf("users.info called %d times after missing_scope, want 1", n)
		}
		if n := strings.Count(logs.String(), "no users:read scope"); n != 1 {
			t.Errorf("missing scope logged %d times, want once:\n%s", n, logs.String())
		}
	})
}

func TestDisplayName(t *testing.T) {
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{Users: map[string]string{"U9": "Bo"}}})
	u, err := h.a.api.GetUserInfoContext(h.ctx(), "U9")
	if err != nil {
		t.Fatal(err)
	}
	if got := displayName(u); got != "Bo" {
		t.Errorf("display name = %q", got)
	}
	u.Profile.DisplayName = " "
	if got := displayName(u); got != "Real Bo" {
		t.Errorf("without a display name = %q, want the real name", got)
	}
}
