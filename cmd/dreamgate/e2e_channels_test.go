package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// longAnswer is 5,000 characters with a code block in the middle, which a
// 2000-character split must cut through.
func longAnswer() string {
	var b strings.Builder
	b.WriteString(strings.Repeat("Some prose before the code. ", 60))
	b.WriteString("\n```go\n")
	for b.Len() < 3800 {
		b.WriteString("fmt.Println(\"a line of code in the block\")\n")
	}
	b.WriteString("```\n")
	for b.Len() < 5000 {
		b.WriteString("Closing words. ")
	}
	return b.String()[:5000]
}

func channelHarness(t *testing.T) (*harness, *fakeslack.Server, *fakediscord.Server) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"U1": "Ana"}})
	t.Cleanup(sl.Close)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("G1", fakediscord.Channel{ID: "C42", GuildID: "G1", Name: "general", Type: 0})
	dc.AddChannel(fakediscord.Channel{ID: "DM1", Type: 1})

	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
		"allowFrom": []string{"U1", "UADMIN"},
	})
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()})
	h.set("admins", []string{"slack:UADMIN"})
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1]
		if strings.Contains(last.Content, "long answer") {
			return llmtest.Text(longAnswer())
		}
		return llmtest.Text("pong: " + llmtest.Spoken(last.Content))
	})
	return h, sl, dc
}

func chatRequests(h *harness) int {
	n := 0
	for _, r := range h.llm.Requests() {
		if len(r.Tools) > 0 {
			n++
		}
	}
	return n
}

func TestSlackAndDiscordThroughTheBinary(t *testing.T) {
	h, sl, dc := channelHarness(t)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack", "discord")
	ctx := waitCtx(t)
	if err := dc.WaitSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}

	t.Run("slack mention gets a threaded reply", func(t *testing.T) {
		ds, err := sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> hello there"})
		if err != nil {
			t.Fatal(err)
		}
		posts, err := sl.WaitPosts(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		p := posts[0]
		if p.Channel != "C1" || p.ThreadTS != ds[0].Event.TS || p.Text != "pong: hello there" {
			t.Errorf("post = %+v, want a reply to %s in its thread", p, ds[0].Event.TS)
		}
		// The model is told who is speaking, by the name Slack shows.
		reqs := h.llm.Requests()
		msgs := reqs[len(reqs)-1].Messages
		if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "Sender: Ana (U1).]") || !strings.Contains(last, "[Ana] hello there") {
			t.Errorf("the message does not name the sender as Ana (U1):\n%s", last)
		}
	})

	t.Run("discord DM gets a reply", func(t *testing.T) {
		if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: "DM1", Author: fakediscord.User{ID: "U7"}, Content: "hi from discord"}); err != nil {
			t.Fatal(err)
		}
		sent, err := dc.WaitSent(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if sent[0].ChannelID != "DM1" || sent[0].Content != "pong: hi from discord" {
			t.Errorf("sent = %+v", sent[0])
		}
	})

	t.Run("a mention before a command runs the command", func(t *testing.T) {
		before := chatRequests(h)
		if _, err := sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> /dream-log"}); err != nil {
			t.Fatal(err)
		}
		posts, err := sl.WaitPosts(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := posts[1].Text; !strings.Contains(got, "Dream") || strings.HasPrefix(got, "pong") {
			t.Errorf("/dream-log answered %q", got)
		}
		if chatRequests(h) != before {
			t.Error("the command reached the model")
		}
	})

	t.Run("a 5000-char answer is three Discord messages with balanced fences", func(t *testing.T) {
		if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: "C42", Author: fakediscord.User{ID: "U8"}, Content: "<@" + dc.BotID() + "> long answer please"}); err != nil {
			t.Fatal(err)
		}
		sent, err := dc.WaitSent(ctx, 4)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		parts := sent[1:]
		if len(parts) != 3 {
			t.Fatalf("got %d messages", len(parts))
		}
		var joined strings.Builder
		for i, p := range parts {
			if n := utf8.RuneCountInString(p.Content); n > 2000 {
				t.Errorf("part %d has %d chars", i, n)
			}
			if !testkit.FencesBalanced(p.Content) {
				t.Errorf("part %d has unbalanced fences", i)
			}
			joined.WriteString(p.Content)
		}
		if strings.Count(joined.String(), "a line of code in the block") != strings.Count(longAnswer(), "a line of code in the block") {
			t.Error("code lines were lost in the split")
		}
	})

	t.Run("a sender not in allowFrom gets no model call", func(t *testing.T) {
		before := chatRequests(h)
		n := len(sl.Posts())
		sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U9", Text: "<@UBOT> let me in"})
		// A later allowed message in the same channel is handled after it,
		// so once it is answered the refused one has been dealt with.
		sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> marker"})
		posts, err := sl.WaitPosts(ctx, n+1)
		if err != nil {
			t.Fatal(err)
		}
		if got := posts[len(posts)-1].Text; got != "pong: marker" {
			t.Errorf("last post = %q", got)
		}
		if after := chatRequests(h); after != before+1 {
			t.Errorf("model calls went from %d to %d; the refused sender must not reach it", before, after)
		}
		for _, r := range h.llm.Requests() {
			if strings.Contains(r.Messages[len(r.Messages)-1].Content, "let me in") {
				t.Error("the refused message reached the model")
			}
		}
	})

	t.Run("only admins may restore", func(t *testing.T) {
		n := len(sl.Posts())
		sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> /dream-restore abcd"})
		posts, err := sl.WaitPosts(ctx, n+1)
		if err != nil {
			t.Fatal(err)
		}
		if got := posts[n].Text; !strings.HasPrefix(got, "Not allowed") {
			t.Errorf("non-admin restore answered %q", got)
		}
		sl.InjectPost(fakeslack.Event{Channel: "C1", User: "UADMIN", Text: "<@UBOT> /dream-restore"})
		posts, err = sl.WaitPosts(ctx, n+2)
		if err != nil {
			t.Fatal(err)
		}
		if got := posts[n+1].Text; strings.HasPrefix(got, "Not allowed") {
			t.Errorf("admin restore refused: %q", got)
		}
	})

	hb, err := gw.healthz()
	if err != nil || hb.Status != "ok" {
		t.Errorf("healthz = %+v, %v", hb, err)
	}
}

func TestSIGTERMLetsTheRunningTurnFinish(t *testing.T) {
	h, sl, _ := channelHarness(t)
	h.llm.SetResponder(nil)
	h.llm.Push(llmtest.Slow(700*time.Millisecond, llmtest.Text("finished after the signal")))
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	ctx := waitCtx(t)
	if _, err := sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> take your time"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.llm.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gw.exited:
	case <-ctx.Done():
		t.Fatalf("gateway did not exit; log:\n%s", gw.stderr.String())
	}
	posts := sl.Posts()
	if len(posts) != 1 || posts[0].Text != "finished after the signal" {
		t.Errorf("posts after shutdown = %+v; log:\n%s", posts, gw.stderr.String())
	}
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
}
