package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// A command a crash left unanswered is run by the next start, as a chat
// message is answered: a recent one again (its answer replying to it, so a
// Slack or Discord slash command's answer goes through its response_url or
// interaction token), an old one asked for again; a priority command is
// answered at once and never kept; and a command delivered again is
// ignored, as a message is.
func TestCommandAnsweredAfterARestart(t *testing.T) {
	now := time.Now()
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
		t.Error("a command reached the model")
		return textReply("no"), nil
	}, func(cfg *Config, _ *Deps) { cfg.AnswerPending = 10 * time.Minute })
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	k := newKilledState(t, path, env.sessions)
	k.message("test:recent", "slash:T1", "/help", now.Add(-time.Minute), false, "")
	k.message("test:old", "slash:T2", "/help", now.Add(-time.Hour), false, "")
	k.ib.close()

	if err := env.g.OpenInbox(path); err != nil {
		t.Fatal(err)
	}
	env.g.answerPending()
	got := map[string]channels.Outbound{}
	for range 2 {
		o := env.ch.next(t)
		got[o.SessionKey] = o
	}
	if o := got["test:recent"]; !strings.Contains(o.Text, "/dream-log") || o.ReplyTo != "slash:T1" {
		t.Errorf("the recent /help answered with %+v", o)
	}
	if o := got["test:old"]; o.Text != restartedNotice || o.ReplyTo != "slash:T2" {
		t.Errorf("the old /help answered with %+v", o)
	}

	help := inbound("live", "/help")
	if r := wait(t, must(env.g.Submit(t.Context(), help))); !strings.Contains(r.Reply, "/dream-log") {
		t.Fatalf("/help: %+v", r)
	}
	env.ch.next(t)
	if r := wait(t, must(env.g.Submit(t.Context(), help))); r.Reply != "" {
		t.Errorf("/help delivered again answered %q, want nothing", r.Reply)
	}
	status := inbound("live", "/status")
	if r := wait(t, must(env.g.Submit(t.Context(), status))); r.Reply == "" {
		t.Fatalf("/status: %+v", r)
	}
	env.ch.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ib, left, _, err := openInbox(path, time.Now())
	if err != nil || len(left) != 0 {
		t.Errorf("after the start the inbox still holds %+v (%v)", left, err)
	}
	if known, _ := ib.accept(inboxLine{Key: status.SessionKey, Origin: originOf(status), Text: status.Text, Time: now}); known {
		t.Error("a priority command was kept in the inbox")
	}
	ib.close()
}
