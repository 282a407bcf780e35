package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/channeltest"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// withClock makes the adapter's send retries wait on clock, with window.
func withClock(clock *channeltest.Clock, window time.Duration) func(*Adapter) {
	return func(a *Adapter) {
		a.sendRetry.Clock = clock
		a.sendRetry.Window = window
	}
}

func postCalls(f *fakeslack.Server, channel string) (limited, ok int) {
	for _, c := range f.Calls() {
		if c.Method != "chat.postMessage" {
			continue
		}
		switch c.Status {
		case http.StatusTooManyRequests:
			limited++
		case http.StatusOK:
			ok++
		}
	}
	return limited, ok
}

// A rate-limit storm far longer than the old five waits (~6 s): the reply,
// split in two parts, is delivered once, its parts in order and before the
// conversation's next reply.
func TestSustainedRateLimitIsWaitedOutInOrder(t *testing.T) {
	clock := channeltest.NewClock()
	var logs lockedBuffer
	h := startHarness(t, harnessOpts{adapter: withClock(clock, 0), logTo: &logs})
	const storm = 12
	h.fake.RateLimitChannel("C1", storm, time.Second)
	long := strings.Repeat("a", MaxMessageLen) + " " + strings.Repeat("b", 100)
	first := channels.Outbound{Channel: Name, ChatID: "C1", ThreadID: "1.2", SessionKey: "slack:C1:1.2", Text: long}
	if err := h.a.Send(h.ctx(), first); err != nil {
		t.Fatalf("Send through the storm: %v", err)
	}
	second := first
	second.Text = "the next reply"
	if err := h.a.Send(h.ctx(), second); err != nil {
		t.Fatal(err)
	}
	posts := h.fake.Posts()
	if len(posts) != 3 || !strings.HasPrefix(posts[0].Text, "aaa") || !strings.HasSuffix(posts[1].Text, "bbb") || posts[2].Text != "the next reply" {
		t.Fatalf("posts = %d %v, want part 1, part 2, the next reply, once each", len(posts), postTexts(posts))
	}
	if limited, _ := postCalls(h.fake, "C1"); limited != storm {
		t.Errorf("%d posts answered 429, want the storm's %d", limited, storm)
	}
	if n, slept := clock.Slept(); n != storm || slept < storm*time.Second {
		t.Errorf("waited %d times, %v in all; want each Retry-After (%d × 1s)", n, slept, storm)
	}
	if strings.Contains(logs.String(), "dropped") {
		t.Errorf("a delivered reply was logged as dropped:\n%s", logs.String())
	}
}

func postTexts(posts []fakeslack.Post) []string {
	var out []string
	for _, p := range posts {
		out = append(out, p.Text[:min(len(p.Text), 12)])
	}
	return out
}

// A storm that outlasts the window drops the reply, then, with one ERROR
// line naming the session, kind, length and time tried, and never the text.
func TestRateLimitPastTheWindowDropsWithOneLogLine(t *testing.T) {
	clock := channeltest.NewClock()
	var logs lockedBuffer
	const window = 40 * time.Second
	h := startHarness(t, harnessOpts{adapter: withClock(clock, window), logTo: &logs, logLevel: slog.LevelError})
	h.fake.RateLimitChannel("C1", -1, 3*time.Second)
	out := channels.Outbound{Channel: Name, ChatID: "C1", ThreadID: "1.2", SessionKey: "slack:C1:1.2", Kind: channels.KindReply, Text: "the hidden words"}
	start := clock.Now()
	err := h.a.Send(h.ctx(), out)
	if !errors.Is(err, channels.ErrDropped) {
		t.Fatalf("Send = %v, want ErrDropped", err)
	}
	if tried := clock.Now().Sub(start); tried != window {
		t.Errorf("gave up after %v, want the window (%v)", tried, window)
	}
	if n := len(h.fake.Posts()); n != 0 {
		t.Errorf("%d posts", n)
	}
	// 3 s apart: at 0, 3, …, 39 and a last one at 40.
	if limited, _ := postCalls(h.fake, "C1"); limited != 15 {
		t.Errorf("%d attempts, want 15", limited)
	}
	got := logs.String()
	if strings.Count(got, "level=ERROR") != 1 || !strings.Contains(got, "dropped") {
		t.Fatalf("want one ERROR line about the drop:\n%s", got)
	}
	for _, want := range []string{"session=slack:C1:1.2", "kind=reply", "len=16", "tried=40s"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hidden") {
		t.Errorf("log shows the text:\n%s", got)
	}
}

// Server errors too are retried past the old three tries, and the post is
// looked for before each retry, so it arrives once.
func TestServerErrorsRetriedWithinTheWindow(t *testing.T) {
	clock := channeltest.NewClock()
	h := startHarness(t, harnessOpts{adapter: withClock(clock, 0)})
	for range 6 {
		h.fake.FailNextPost(http.StatusServiceUnavailable)
	}
	h.fake.FailNextPostAfterPosting(http.StatusBadGateway)
	if err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C7", ThreadID: "9.9", Text: "persist"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "persist" {
		t.Fatalf("posts = %+v, want one", posts)
	}
	if n := h.fake.CallCount("chat.postMessage"); n != 7 {
		t.Errorf("%d chat.postMessage calls, want 7", n)
	}
}

// One conversation waiting out its channel's rate limit does not hold up
// another's reply; it is delivered itself once the storm ends.
func TestRateLimitedConversationDoesNotBlockOthers(t *testing.T) {
	clock := channeltest.NewClock()
	h := startHarness(t, harnessOpts{adapter: withClock(clock, 0)})
	h.fake.RateLimitChannel("C1", 8, time.Second)
	waiting, release := clock.Hold()
	defer release()
	done := make(chan error, 1)
	go func() {
		done <- h.a.Send(h.ctx(), channels.Outbound{ChatID: "C1", SessionKey: "slack:C1", Text: "slow"})
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("Send returned %v before waiting", err)
	}
	if err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C2", SessionKey: "slack:C2", Text: "quick"}); err != nil {
		t.Fatalf("other conversation: %v", err)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "quick" {
		t.Fatalf("posts while C1 waits = %+v, want only C2's", posts)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("rate-limited conversation: %v", err)
	}
	if posts := h.fake.Posts(); len(posts) != 2 || posts[1].Text != "slow" {
		t.Fatalf("posts = %+v, want C2's then C1's", posts)
	}
}

// Shutdown ends a wait at once: the retry honours the context.
func TestRateLimitWaitEndsWithContext(t *testing.T) {
	clock := channeltest.NewClock()
	var logs lockedBuffer
	h := startHarness(t, harnessOpts{adapter: withClock(clock, 0), logTo: &logs})
	h.fake.RateLimitChannel("C1", -1, time.Second)
	waiting, release := clock.Hold()
	defer release()
	ctx, cancel := context.WithCancel(h.ctx())
	go func() { <-waiting; cancel() }()
	err := h.a.Send(ctx, channels.Outbound{ChatID: "C1", SessionKey: "slack:C1", Text: "bye"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want context.Canceled", err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancelled send logged a drop:\n%s", logs.String())
	}
}

// A streamed reply's final edit also waits out a storm longer than the old
// five waits: the message ends as the final text.
func TestStreamFinalEditWaitsOutSustainedRateLimit(t *testing.T) {
	clock := channeltest.NewClock()
	h := startHarness(t, harnessOpts{adapter: func(a *Adapter) {
		a.streamDelay, a.streamInterval = 0, 0
		withClock(clock, 0)(a)
	}})
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("one")
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	const storm = 8
	for range storm {
		h.fake.RateLimitNextUpdate(time.Second)
	}
	out := channels.ReplyTo(in, channels.KindReply, "one two three")
	out.Streamed = true
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatalf("final edit through the storm: %v", err)
	}
	ups := h.fake.Updates()
	if len(ups) == 0 || ups[len(ups)-1].Text != "one two three" || len(h.fake.Posts()) != 1 {
		t.Fatalf("updates = %+v, posts = %d: want the one message edited to the final text", ups, len(h.fake.Posts()))
	}
	if n, _ := clock.Slept(); n != storm {
		t.Errorf("waited %d times, want %d", n, storm)
	}
}
