package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

func TestChannelMentionRepliesInThread(t *testing.T) {
	h := startHarness(t, harnessOpts{sink: echoReplies(t), fake: fakeslack.Config{Users: map[string]string{"U1": "Ana"}}})
	d := h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hello there"})

	in := h.sink.next(t)
	want := channels.Inbound{
		Channel: "slack", ChatID: "C1", ThreadID: d.Event.TS, SessionKey: "slack:C1:" + d.Event.TS,
		SenderID: "U1", SenderName: "Ana", MessageID: d.Event.TS, Text: "hello there", Time: parseTS(d.Event.TS),
		Audience: audience.Audience{Kind: audience.Team, Platform: "slack", Team: fakeslack.DefaultTeamID},
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("inbound = %+v\nwant %+v", in, want)
	}
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	p := posts[0]
	if p.Channel != "C1" || p.ThreadTS != d.Event.TS || p.Text != "re: hello there" || p.Token != h.fake.BotToken() {
		t.Errorf("post = %+v, want a reply in thread %s", p, d.Event.TS)
	}

	// A follow-up in the thread lands in the same session and thread.
	d2 := h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> and more", ThreadTS: d.Event.TS})
	in2 := h.sink.next(t)
	if in2.SessionKey != in.SessionKey || in2.ThreadID != d.Event.TS || in2.MessageID != d2.Event.TS {
		t.Errorf("follow-up = %+v, want session %s", in2, in.SessionKey)
	}
	if posts, err := h.fake.WaitPosts(h.ctx(), 2); err != nil || posts[1].ThreadTS != d.Event.TS {
		t.Errorf("follow-up reply = %+v, %v", posts, err)
	}
	if err := h.fake.WaitAcked(h.ctx(), d.EnvelopeID, d2.EnvelopeID); err != nil {
		t.Error(err)
	}
}

func TestDMReply(t *testing.T) {
	h := startHarness(t, harnessOpts{sink: echoReplies(t)})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "hi bot"})
	in := h.sink.next(t)
	if in.SessionKey != "slack:D1" || in.ThreadID != "" || in.Text != "hi bot" {
		t.Errorf("inbound = %+v", in)
	}
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if posts[0].Channel != "D1" || posts[0].ThreadTS != "" || posts[0].Text != "re: hi bot" {
		t.Errorf("post = %+v, want a top-level DM reply", posts[0])
	}
}

func TestMentionStrippedFromCommand(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	for _, text := range []string{"<@UBOT> /dream-log", "<@UBOT|dreambot>   /dream-log  ", "<@UBOT>\n/dream-log"} {
		h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: text})
		if in := h.sink.next(t); in.Text != "/dream-log" {
			t.Errorf("%q arrived as %q, want /dream-log", text, in.Text)
		}
	}
}

func TestMessageAndMentionOfOnePostDeliveredOnce(t *testing.T) {
	for _, policy := range []string{PolicyMention, PolicyOpen} {
		t.Run(policy, func(t *testing.T) {
			h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.GroupPolicy = policy }})
			ds, err := h.fake.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> one post"})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 2 {
				t.Fatalf("fake sent %d envelopes, want message + app_mention", len(ds))
			}
			got := h.sentinel("U1")
			if len(got) != 1 || got[0].Text != "one post" {
				t.Errorf("deliveries = %+v, want exactly one", got)
			}
			if err := h.fake.WaitAcked(h.ctx(), ds[0].EnvelopeID, ds[1].EnvelopeID); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRetriedEnvelopeDeliveredOnceAndAcked(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	d := h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "say it once"})
	r, err := h.fake.Retry(d)
	if err != nil {
		t.Fatal(err)
	}
	if r.EnvelopeID == d.EnvelopeID || r.EventID != d.EventID || r.Attempt != 1 {
		t.Fatalf("retry = %+v, want a new envelope for event %s", r, d.EventID)
	}
	got := h.sentinel("U1")
	if len(got) != 1 {
		t.Errorf("deliveries = %+v, want one", got)
	}
	if err := h.fake.WaitAcked(h.ctx(), d.EnvelopeID, r.EnvelopeID); err != nil {
		t.Error(err)
	}
}

func TestOwnMessagesIgnored(t *testing.T) {
	// With EchoPosts the fake sends every reply back as Slack does; in the
	// open policy they would be answered, looping, if not ignored.
	h := startHarness(t, harnessOpts{
		cfg:  func(c *Config) { c.GroupPolicy = PolicyOpen },
		fake: fakeslack.Config{EchoPosts: true},
		sink: echoReplies(t),
	})
	h.inject(fakeslack.Event{Channel: "C1", User: "U1", Text: "hello"})
	if in := h.sink.next(t); in.Text != "hello" {
		t.Fatalf("first delivery = %+v", in)
	}
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	// The fake put the echo on the wire before answering the post; a
	// message by the bot's user id without bot_id must be ignored too.
	h.inject(fakeslack.Event{Channel: "C1", User: "UBOT", Text: "from myself"})
	got := h.sentinel("U1")
	if len(got) != 0 {
		t.Errorf("own messages delivered: %+v", got)
	}
	echoed := 0
	for _, d := range h.fake.Deliveries() {
		if d.Event.BotID == "BBOT" && d.Event.Text == "re: hello" {
			echoed++
		}
	}
	if echoed != 1 {
		t.Errorf("fake echoed the reply %d times, want 1", echoed)
	}
}

func TestAllowFrom(t *testing.T) {
	h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.AllowFrom = []string{"U1"} }})
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U2", Text: "<@UBOT> hi"})
	h.inject(fakeslack.Event{Channel: "D2", User: "U2", Text: "let me in"})
	h.inject(fakeslack.Event{Channel: "D2", User: "U2", Text: "please"})
	if got := h.sentinel("U1"); len(got) != 0 {
		t.Errorf("delivered from a user not in allowFrom: %+v", got)
	}
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if posts[0].Channel != "D2" || posts[0].Text != channels.NotAllowedNotice {
		t.Errorf("post = %+v, want the allow-list notice in the DM", posts[0])
	}
	// Only once per user. Run waits for its notices before returning, so
	// after it returned every notice it meant to send is at the fake.
	h.inject(fakeslack.Event{Channel: "D2", User: "U2", Text: "again"})
	h.sentinel("U1")
	h.cancel()
	if err := h.result(); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fake.Posts()); n != 1 {
		t.Errorf("%d posts, want the notice once (the channel mention stays silent)", n)
	}
}

func TestGroupPolicies(t *testing.T) {
	type ev struct {
		name string
		ev   fakeslack.Event
	}
	events := []ev{
		{"mention in C1", fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> m1"}},
		{"chatter in C1", fakeslack.Event{Channel: "C1", User: "U1", Text: "chatter1"}},
		{"mention in C2", fakeslack.Event{Type: "app_mention", Channel: "C2", User: "U1", Text: "<@UBOT> m2"}},
		{"chatter in C2", fakeslack.Event{Channel: "C2", User: "U1", Text: "chatter2"}},
		{"DM", fakeslack.Event{Channel: "D1", User: "U1", Text: "dm"}},
	}
	tests := []struct {
		policy        string
		allowChannels []string
		want          []string // texts delivered
	}{
		{PolicyMention, nil, []string{"m1", "m2", "dm"}},
		{PolicyMention, []string{"C1"}, []string{"m1", "dm"}},
		{PolicyOpen, nil, []string{"m1", "chatter1", "m2", "chatter2", "dm"}},
		{PolicyOpen, []string{"C2"}, []string{"m2", "chatter2", "dm"}},
		{PolicyAllowlist, []string{"C1"}, []string{"m1", "chatter1", "dm"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.policy, tt.allowChannels), func(t *testing.T) {
			h := startHarness(t, harnessOpts{cfg: func(c *Config) {
				c.GroupPolicy, c.AllowChannels = tt.policy, tt.allowChannels
			}})
			for _, e := range events {
				h.inject(e.ev)
			}
			var texts []string
			for _, in := range h.sentinel("U1") {
				texts = append(texts, in.Text)
			}
			if !slices.Equal(texts, tt.want) {
				t.Errorf("delivered %q, want %q", texts, tt.want)
			}
		})
	}
}

func TestLongReplies(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	out := channels.Outbound{Channel: "slack", ChatID: "C1", ThreadID: "111.222", SessionKey: "slack:C1:111.222"}

	out.Text = strings.Repeat("word ", 1000) // 5,000 chars
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(posts) != 1 || utf8.RuneCountInString(posts[0].Text) < 4999 {
		t.Fatalf("5,000-char reply: %d posts", len(posts))
	}

	// 80,000 chars with code blocks crossing the split points.
	var b strings.Builder
	for b.Len() < 80000 {
		b.WriteString("Some prose before the code.\n```go\n")
		for range 200 {
			b.WriteString("fmt.Println(\"a line of code\") // 40 chars\n")
		}
		b.WriteString("```\n")
	}
	out.Text = b.String()
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	posts = h.fake.Posts()[1:]
	if len(posts) < 3 {
		t.Fatalf("80,000-char reply sent as %d posts, want at least 3", len(posts))
	}
	for i, p := range posts {
		if n := utf8.RuneCountInString(p.Text); n > MaxMessageLen {
			t.Errorf("part %d has %d chars", i, n)
		}
		if p.ThreadTS != "111.222" || p.Channel != "C1" {
			t.Errorf("part %d went to %s/%s", i, p.Channel, p.ThreadTS)
		}
		fences := 0
		for line := range strings.SplitSeq(p.Text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fences++
			}
		}
		if fences%2 != 0 {
			t.Errorf("part %d has %d fence lines: unbalanced", i, fences)
		}
	}
	var joined strings.Builder
	for _, p := range posts {
		joined.WriteString(p.Text)
	}
	if got, want := strings.Count(joined.String(), "a line of code"), strings.Count(out.Text, "a line of code"); got != want {
		t.Errorf("parts carry %d code lines, want %d", got, want)
	}
}

func TestTypingReaction(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	d := h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> think"})
	in := h.sink.next(t)
	stop := h.a.StartTyping(h.ctx(), in)
	rs, err := h.fake.WaitReactions(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.Op != "add" || r.Name != "eyes" || r.Channel != "C1" || r.Timestamp != d.Event.TS {
		t.Errorf("reaction = %+v, want eyes added on %s", r, d.Event.TS)
	}
	stop()
	stop() // safe twice
	rs, err = h.fake.WaitReactions(h.ctx(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[1].Op != "remove" || rs[1].Name != "eyes" || rs[1].Timestamp != d.Event.TS {
		t.Errorf("reactions = %+v, want add then remove", rs)
	}
}

func TestTypingStopBeforeAddFinishes(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	in := channels.Inbound{ChatID: "C1", MessageID: "5.5"}
	h.a.StartTyping(h.ctx(), in)() // stop at once: the remove must follow the add
	rs, err := h.fake.WaitReactions(h.ctx(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Op != "add" || rs[1].Op != "remove" {
		t.Errorf("reactions = %+v, want add then remove", rs)
	}
}

// The gateway stops the indicator before it posts the reply, so stop must
// not wait for Slack: a slow reactions API would hold every reply up.
func TestTypingStopDoesNotWaitForSlack(t *testing.T) {
	// Calls outlast the test's waits, so a stop that waits is caught.
	h := startHarness(t, harnessOpts{adapter: func(a *Adapter) { a.reactionTimeout = 2 * waitTimeout }})
	release := h.fake.HoldReactions()
	defer release()
	stop := h.a.StartTyping(h.ctx(), channels.Inbound{ChatID: "C1", MessageID: "6.6"})
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-h.ctx().Done():
		t.Fatal("stop waited for the held reactions API")
	}
	if rs := h.fake.Reactions(); len(rs) != 0 {
		t.Fatalf("reactions = %+v while held, want none yet", rs)
	}
	release()
	rs, err := h.fake.WaitReactions(h.ctx(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Op != "add" || rs[1].Op != "remove" || rs[1].Timestamp != "6.6" {
		t.Errorf("reactions = %+v, want add then remove", rs)
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "before"})
	if in := h.sink.next(t); in.Text != "before" {
		t.Fatalf("got %+v", in)
	}
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitConnections(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	if n := h.fake.CallCount("apps.connections.open"); n != 2 {
		t.Errorf("apps.connections.open called %d times, want 2", n)
	}
	d := h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "after"})
	got := h.sentinel("U1")
	if len(got) != 1 || got[0].Text != "after" {
		t.Errorf("after reconnect delivered %+v, want exactly one", got)
	}
	// Slack replays unacked events after a reconnect: still once.
	if _, err := h.fake.Retry(d); err != nil {
		t.Fatal(err)
	}
	if got := h.sentinel("U1"); len(got) != 0 {
		t.Errorf("replay delivered again: %+v", got)
	}

	// A disconnect request (Slack rotating the connection) reconnects too.
	if err := h.fake.RequestDisconnect("refresh_requested"); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitConnections(h.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "third"})
	if got := h.sentinel("U1"); len(got) != 1 {
		t.Errorf("after rotation delivered %+v", got)
	}
	// Every envelope sent on the last connection is acked (an ack queued
	// as a connection dies may be lost; Slack then redelivers, see above).
	var last []string
	for _, d := range h.fake.Deliveries() {
		if d.At.After(rotated) {
			last = append(last, d.EnvelopeID)
		}
	}
	if err := h.fake.WaitAcked(h.ctx(), last...); err != nil {
		t.Errorf("%v; unacked: %v", err, h.fake.Unacked())
	}
}

func TestRateLimitedSendWaitsRetryAfter(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	h.fake.RateLimitNextPost(time.Second)
	out := channels.Outbound{ChatID: "C1", ThreadID: "1.2", Text: "after the limit"}
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	var attempts []fakeslack.Call
	for _, c := range h.fake.Calls() {
		if c.Method == "chat.postMessage" {
			attempts = append(attempts, c)
		}
	}
	if len(attempts) != 2 || attempts[0].Status != http.StatusTooManyRequests || attempts[1].Status != http.StatusOK {
		t.Fatalf("post attempts = %+v, want 429 then 200", attempts)
	}
	if gap := attempts[1].At.Sub(attempts[0].At); gap < time.Second {
		t.Errorf("retried after %v, want at least Retry-After (1s)", gap)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "after the limit" {
		t.Errorf("posts = %+v, want exactly one", posts)
	}
}

// A failed post is retried, but never posted twice: before each retry the
// adapter looks for the post (by its metadata id) among the conversation's
// recent messages, since a 5xx does not say whether Slack posted.
func TestSendRetries(t *testing.T) {
	const fail, failAfterPosting = false, true
	type failure struct {
		status    int
		afterPost bool
	}
	tests := []struct {
		name      string
		thread    string
		failures  []failure
		noHistory bool
		wantErr   bool
		wantPosts int
		wantCalls int
		wantCheck string // the read that found (or not) the post
	}{
		{"two 500s then ok", "9.9", []failure{{500, fail}, {502, fail}}, false, false, 1, 3, "conversations.replies"},
		{"three 500s: the fourth try goes through", "9.9", []failure{{500, fail}, {500, fail}, {503, fail}}, false, false, 1, 4, "conversations.replies"},
		{"400 is not retried", "9.9", []failure{{400, fail}}, false, true, 0, 1, ""},
		{"500 after posting in a thread: not posted again", "9.9", []failure{{500, failAfterPosting}}, false, false, 1, 1, "conversations.replies"},
		{"500 after posting at top level: not posted again", "", []failure{{502, failAfterPosting}}, false, false, 1, 1, "conversations.history"},
		{"last of three 500s posted: success", "9.9", []failure{{500, fail}, {500, fail}, {503, failAfterPosting}}, false, false, 1, 3, "conversations.replies"},
		{"cannot read the history: posted again rather than lost", "9.9", []failure{{500, failAfterPosting}}, true, false, 2, 2, "conversations.replies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, harnessOpts{fake: fakeslack.Config{NoHistoryScope: tt.noHistory}})
			for _, f := range tt.failures {
				if f.afterPost {
					h.fake.FailNextPostAfterPosting(f.status)
				} else {
					h.fake.FailNextPost(f.status)
				}
			}
			err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C7", ThreadID: tt.thread, Text: "x"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Send error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!strings.Contains(err.Error(), "C7") || !strings.Contains(err.Error(), tt.thread)) {
				t.Errorf("error %q does not name the channel and thread", err)
			}
			if n := len(h.fake.Posts()); n != tt.wantPosts {
				t.Errorf("%d posts, want %d", n, tt.wantPosts)
			}
			if n := h.fake.CallCount("chat.postMessage"); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if tt.wantCheck != "" && h.fake.CallCount(tt.wantCheck) == 0 {
				t.Errorf("no %s call: the post was not looked for before retrying", tt.wantCheck)
			}
			if n := h.fake.CallCount("conversations.history") + h.fake.CallCount("conversations.replies"); tt.wantCheck == "" && n != 0 {
				t.Errorf("%d history reads for a post that was never in doubt", n)
			}
		})
	}
}

// A Slack that refuses the post's metadata still gets the reply: once
// without it, and later posts skip it.
func TestSendWithoutMetadataWhenRefused(t *testing.T) {
	var logs lockedBuffer
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{RejectMetadata: true}, logTo: &logs, logLevel: slog.LevelWarn})
	for _, text := range []string{"first", "second"} {
		if err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C7", ThreadID: "9.9", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if posts := h.fake.Posts(); len(posts) != 2 || posts[0].Metadata != nil || posts[1].Text != "second" {
		t.Errorf("posts = %+v, want both, without metadata", posts)
	}
	if n := h.fake.CallCount("chat.postMessage"); n != 3 {
		t.Errorf("%d chat.postMessage calls, want 3 (one refused, then one per post)", n)
	}
	if n := strings.Count(logs.String(), "refused message metadata"); n != 1 {
		t.Errorf("refusal logged %d times, want once:\n%s", n, logs.String())
	}
}

func TestSendWithRejectedTokenFailsOnce(t *testing.T) {
	fake := fakeslack.New(fakeslack.Config{})
	t.Cleanup(fake.Close)
	a, err := New(Config{BotToken: "xoxb-wrong", AppToken: fake.AppToken(), APIURL: fake.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Send(t.Context(), channels.Outbound{ChatID: "C1", Text: "hi"})
	if err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("Send = %v, want invalid_auth", err)
	}
	if strings.Contains(err.Error(), "xoxb-wrong") {
		t.Errorf("error leaks the token: %v", err)
	}
	if n := fake.CallCount("chat.postMessage"); n != 1 {
		t.Errorf("%d calls, want 1 (not retried)", n)
	}
}

func TestBusyAndClosedSink(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		h := startHarness(t, harnessOpts{sink: func(s *recSink, _ *Adapter) {
			s.respond = func(in channels.Inbound) error {
				if in.Text == "too much" {
					return channels.ErrBusy
				}
				return nil
			}
		}})
		d := h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> too much"})
		posts, err := h.fake.WaitPosts(h.ctx(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if posts[0].Text != channels.BusyNotice || posts[0].ThreadTS != d.Event.TS {
			t.Errorf("post = %+v, want the busy notice in the thread", posts[0])
		}
	})
	t.Run("closed", func(t *testing.T) {
		h := startHarness(t, harnessOpts{sink: func(s *recSink, _ *Adapter) {
			s.respond = func(channels.Inbound) error { return channels.ErrClosed }
		}})
		h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "anyone?"})
		if err := h.result(); err != nil {
			t.Errorf("Run = %v, want nil after ErrClosed", err)
		}
		if st := h.a.Health().State; st != channels.StateStopped {
			t.Errorf("health = %s, want stopped", st)
		}
	})
}

func TestUnreadableEnvelopesAcked(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	slash, err := h.fake.SendEnvelope("slash_commands", map[string]any{"command": "/x", "text": "y"})
	if err != nil {
		t.Fatal(err)
	}
	odd, err := h.fake.SendEnvelope("events_api", map[string]any{
		"type": "event_callback", "token": "t", "event": map[string]any{"type": "no_such_event_type"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitAcked(h.ctx(), slash, odd); err != nil {
		t.Error(err)
	}
	if got := h.sentinel("U1"); len(got) != 0 {
		t.Errorf("delivered %+v", got)
	}
}

func TestHealthTransitions(t *testing.T) {
	h := startHarness(t, harnessOpts{noWait: true})
	h.waitHealth(channels.StateConnecting)
	h.waitHealth(channels.StateConnected)
	if err := h.fake.WaitConnections(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	h.waitHealth(channels.StateReconnecting)
	h.waitHealth(channels.StateConnected)
	h.cancel()
	if err := h.result(); err != nil {
		t.Fatal(err)
	}
	if hl := h.a.Health(); hl.State != channels.StateStopped || hl.Since.IsZero() {
		t.Errorf("health after stop = %+v", hl)
	}
}

func TestRunFailsOnRejectedTokens(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(*Config)
		field string
	}{
		{"bot token", func(c *Config) { c.BotToken = "xoxb-revoked" }, "slack.botToken"},
		{"app token", func(c *Config) { c.AppToken = "xapp-revoked" }, "slack.appToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, harnessOpts{cfg: tt.cfg, noWait: true})
			h.expectErr = true
			err := h.result()
			if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Run = %v, want ErrAuth naming %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "xoxb-revoked") || strings.Contains(err.Error(), "xapp-revoked") {
				t.Errorf("error leaks the token: %v", err)
			}
			if hl := h.a.Health(); hl.State != channels.StateFailed {
				t.Errorf("health = %+v, want failed", hl)
			}
		})
	}
}

func TestRunTwiceRefused(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	if err := h.a.Run(context.Background(), h.sink); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
	}
}

func TestLogsCarryNoTokensOrText(t *testing.T) {
	var logs lockedBuffer
	h := startHarness(t, harnessOpts{logTo: &logs, logLevel: slog.LevelInfo, sink: echoReplies(t)})
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> my secret plans"})
	in := h.sink.next(t)
	h.a.StartTyping(h.ctx(), in)()
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitConnections(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	h.cancel()
	if err := h.result(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "slack connected") {
		t.Fatalf("expected info logs, got:\n%s", out)
	}
	for _, secret := range []string{h.fake.BotToken(), h.fake.AppToken(), "ticket-", "secret plans"} {
		if strings.Contains(out, secret) {
			t.Errorf("info logs contain %q:\n%s", secret, out)
		}
	}
}

func TestDebugLogsCarryNoTokens(t *testing.T) {
	// At debug, slack-go's own logging is on (routed into slog); it must
	// not print the tokens either.
	var logs lockedBuffer
	h := startHarness(t, harnessOpts{logTo: &logs, logLevel: slog.LevelDebug, sink: echoReplies(t)})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Text: "hello"})
	h.sink.next(t)
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	h.cancel()
	if err := h.result(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "lib=slack-go") {
		t.Fatalf("slack-go's debug lines did not reach slog:\n%s", out)
	}
	for _, secret := range []string{h.fake.BotToken(), h.fake.AppToken()} {
		if strings.Contains(out, secret) {
			t.Errorf("debug logs contain a token:\n%s", out)
		}
	}
}
