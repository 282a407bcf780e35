package gateway

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

// fullDisk writes half of each write and then fails, while full is set.
type fullDisk struct {
	w    io.Writer
	full *atomic.Bool
}

func (d fullDisk) Write(p []byte) (int, error) {
	if !d.full.Load() {
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:len(p)/2])
	return n, syscall.ENOSPC
}

// A message that cannot be saved is not answered, the sender is told so in
// one sentence, and the failed write does not swallow the next message.
func TestUnsavedMessageIsToldAndLosesNothingElse(t *testing.T) {
	var full atomic.Bool
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("noted"), nil
	}, nil)
	env.sessions.WrapWrites(func(w io.Writer) io.Writer { return fullDisk{w: w, full: &full} })

	say := func(text string) Result {
		t.Helper()
		done, err := env.g.Submit(t.Context(), inbound("disk", text))
		if err != nil {
			t.Fatal(err)
		}
		return wait(t, done)
	}
	if r := say("my locker is 42"); r.Err != nil {
		t.Fatalf("first turn: %+v", r)
	}
	env.ch.next(t)

	full.Store(true)
	calls := len(env.model.Requests())
	r := say("my badge is 7")
	out := env.ch.next(t)
	if r.Err == nil || out.Kind != channels.KindError || !strings.Contains(out.Text, "could not save your message") {
		t.Fatalf("unsaved message: result %+v, sent %+v", r, out)
	}
	if strings.Count(strings.TrimSuffix(out.Text, "."), ".") > 0 || strings.Contains(out.Text, "no space") {
		t.Errorf("the notice must be one sentence without the error: %q", out.Text)
	}
	if len(env.model.Requests()) != calls {
		t.Error("an unsaved message reached the model")
	}

	full.Store(false)
	if r := say("my desk is 12"); r.Err != nil {
		t.Fatalf("turn after the disk recovered: %+v", r)
	}
	env.ch.next(t)

	// What a restarted gateway reads (the first has let go of it).
	if err := env.sessions.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(env.ws), "sessions")
	again, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := again.Get("test:disk")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range s.Messages() {
		if m.Role == llm.RoleUser {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "my locker is 42|my desk is 12" {
		t.Errorf("user messages after a restart: %q", users)
	}
}
