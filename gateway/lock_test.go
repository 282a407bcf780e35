package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

// A conversation another process holds is not answered: the sender reads
// the one sentence that says so, nothing reaches the model or the file, and
// /new is refused the same way. Once the other process lets go, it works.
func TestTurnOnAConversationHeldElsewhereIsRefused(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		return textReply("noted"), nil
	}, nil)
	other, err := session.NewStore(filepath.Join(filepath.Dir(env.ws), "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := inbound("busy", "x").SessionKey
	held, err := other.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Append(llm.Message{Role: llm.RoleUser, Content: "theirs"}); err != nil {
		t.Fatal(err)
	}

	say := func(text string) (Result, channels.Outbound) {
		t.Helper()
		done, err := env.g.Submit(t.Context(), inbound("busy", text))
		if err != nil {
			t.Fatal(err)
		}
		r := wait(t, done)
		return r, env.ch.next(t)
	}
	want := fmt.Sprintf("This conversation is open in another dreamgate process (pid %d); use --session NAME for another one.", os.Getpid())
	r, out := say("remember X=1")
	if r.Err == nil || out.Kind != channels.KindError || out.Text != want {
		t.Fatalf("turn on a held conversation: result %+v, sent %+v", r, out)
	}
	if _, out := say("/new"); out.Text != want {
		t.Errorf("/new on a held conversation: %+v", out)
	}
	if n := len(env.model.Requests()); n != 0 {
		t.Errorf("%d model calls for a refused turn", n)
	}
	if msgs := held.Messages(); len(msgs) != 1 {
		t.Errorf("the holder's file has %v", msgs)
	}

	if !other.Evict(held) {
		t.Fatal("evict")
	}
	if r, out := say("remember X=1"); r.Err != nil || out.Text != "noted" {
		t.Errorf("after the other process let go: %+v, %+v", r, out)
	}
}
