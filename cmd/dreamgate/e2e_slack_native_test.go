package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// Slack the native way, through the binary: slash commands under a
// prefix (admin checked by Slack user id, answers through response_url),
// /help in the form that works on Slack, the earlier messages of a thread
// the bot is mentioned in, and a file-only post.
func TestSlackNativeThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"U1": "Ana", "U2": "Bo"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
		"commandPrefix": "dg-",
	})
	h.set("admins", []string{"slack:UADMIN"})
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		last := llmtest.Spoken(r.Messages[len(r.Messages)-1].Content)
		if strings.Contains(last, "stream please") {
			// The second half never comes in time: the test stops it.
			return llmtest.Reply{Fragments: []string{"Part one of the answer. ", "part two."}, FragmentDelay: time.Hour}
		}
		return llmtest.Text("pong: " + last)
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	ctx := waitCtx(t)

	slash := func(user, cmd, text string) fakeslack.Response {
		t.Helper()
		n := len(sl.Responses())
		if _, _, err := sl.InjectSlashCommand(fakeslack.SlashCommand{Command: cmd, Text: text, User: user, Channel: "C1"}); err != nil {
			t.Fatal(err)
		}
		resps, err := sl.WaitResponses(ctx, n+1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		return resps[n]
	}

	t.Run("slash commands, admin by Slack user id", func(t *testing.T) {
		if r := slash("U1", "/dg-dream-restore", "abcd"); !strings.HasPrefix(r.Text, "Not allowed") || !strings.Contains(r.Text, "slack:U1") {
			t.Errorf("non-admin restore answered %q", r.Text)
		}
		if r := slash("UADMIN", "/dg-dream-restore", ""); strings.HasPrefix(r.Text, "Not allowed") || r.ResponseType != "ephemeral" {
			t.Errorf("admin restore answered %+v", r)
		}
		r := slash("U1", "/dg-help", "")
		for _, want := range []string{"/dg-dream-log [sha] — ", "/dg-status — ", "@dreambot /new"} {
			if !strings.Contains(r.Text, want) {
				t.Errorf("/help lacks %q:\n%s", want, r.Text)
			}
		}
		if len(sl.Posts()) != 0 {
			t.Errorf("slash answers were posted to the channel: %+v", sl.Posts())
		}
	})

	t.Run("a mention in an unseen thread brings its earlier messages", func(t *testing.T) {
		parent := sl.Seed(fakeslack.Message{Channel: "C2", User: "U2", Text: "the build is red since noon"})[0].TS
		sl.Seed(fakeslack.Message{Channel: "C2", User: "U1", Text: "only on arm64", ThreadTS: parent})
		if _, err := sl.InjectPost(fakeslack.Event{Channel: "C2", User: "U1", Text: "<@UBOT> any idea?", ThreadTS: parent}); err != nil {
			t.Fatal(err)
		}
		posts, err := sl.WaitPosts(ctx, 1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if posts[0].ThreadTS != parent || posts[0].Text != "pong: any idea?" {
			t.Errorf("post = %+v", posts[0])
		}
		reqs := h.llm.Requests()
		msgs := reqs[len(reqs)-1].Messages
		ctxMsg := msgs[len(msgs)-2].Content
		for _, want := range []string{"before I was asked", "Bo: the build is red since noon", "Ana: only on arm64"} {
			if !strings.Contains(ctxMsg, want) {
				t.Errorf("the model's context lacks %q:\n%s", want, ctxMsg)
			}
		}
	})

	t.Run("a file-only DM is answered", func(t *testing.T) {
		n := len(sl.Posts())
		if _, err := sl.Inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
			{ID: "F1", Name: "todo.md", Mimetype: "text/markdown", Filetype: "markdown", Content: []byte("- ship it\n")},
		}}); err != nil {
			t.Fatal(err)
		}
		posts, err := sl.WaitPosts(ctx, n+1)
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
		}
		if got := posts[n].Text; !strings.Contains(got, "pong: File todo.md:") || !strings.Contains(got, "ship it") {
			t.Errorf("answer = %q", got)
		}
	})

	t.Run("an answer shows while it is written, and /stop in the thread stops it", func(t *testing.T) {
		ds, err := sl.InjectPost(fakeslack.Event{Channel: "C3", User: "U1", Text: "<@UBOT> stream please"})
		if err != nil {
			t.Fatal(err)
		}
		thread := ds[0].Event.TS
		inThread := func(want string) func() []fakeslack.Post {
			return func() []fakeslack.Post {
				var got []fakeslack.Post
				for _, p := range sl.Posts() {
					if p.Channel == "C3" && p.ThreadTS == thread && strings.Contains(p.Text, want) {
						got = append(got, p)
					}
				}
				return got
			}
		}
		partial := inThread("Part one of the answer.")
		for n := len(sl.Posts()); len(partial()) == 0; n++ {
			if _, err := sl.WaitPosts(ctx, n+1); err != nil {
				t.Fatalf("the first half was never shown: %v; log:\n%s", err, gw.stderr.String())
			}
		}
		if _, err := sl.InjectPost(fakeslack.Event{Channel: "C3", User: "U1", Text: "<@UBOT> /stop", ThreadTS: thread}); err != nil {
			t.Fatal(err)
		}
		stopped := inThread("Stopped.")
		for n := len(sl.Posts()); len(stopped()) == 0; n++ {
			if _, err := sl.WaitPosts(ctx, n+1); err != nil {
				t.Fatalf("no Stopped.: %v; log:\n%s", err, gw.stderr.String())
			}
		}
		if p := partial(); len(p) != 1 || strings.TrimSpace(p[0].Text) != "Part one of the answer." {
			t.Errorf("shown part = %+v", p)
		}
		if len(inThread("part two")()) != 0 {
			t.Error("the unwritten half was shown")
		}
	})
}
