package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// streamHarness starts an adapter whose streams show the first text at
// once and edit at most once per interval.
func streamHarness(t *testing.T, interval time.Duration) *harness {
	return startHarness(t, harnessOpts{adapter: func(a *Adapter) { a.streamDelay, a.streamInterval = 0, interval }})
}

func mentionIn(h *harness) channels.Inbound {
	h.t.Helper()
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> tell me"})
	return h.sink.next(h.t)
}

// A streamed answer appears as it is written, in the thread, and ends as
// exactly the final text in the same message: no second post.
func TestStreamShowsTheAnswerAsWritten(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("The answer ")
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if posts[0].ThreadTS != in.ThreadID || !strings.HasPrefix(posts[0].Text, "The answer") {
		t.Errorf("first post = %+v", posts[0])
	}
	st.Write("is **42**.")
	if _, err := h.fake.WaitUpdates(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	out := channels.ReplyTo(in, channels.KindReply, "The answer is **42**.")
	out.Streamed = true
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	posts = h.fake.Posts()
	if len(posts) != 1 || posts[0].Text != "The answer is *42*." {
		t.Errorf("posts = %+v, want the one message showing the final text", posts)
	}
	ups := h.fake.Updates()
	if last := ups[len(ups)-1]; last.TS != posts[0].TS || last.Text != "The answer is *42*." {
		t.Errorf("last update = %+v", last)
	}
}

// Edits are throttled: with a long interval, the only edit after the first
// post is the final text.
func TestStreamEditsThrottled(t *testing.T) {
	h := streamHarness(t, time.Hour)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("a")
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	all.WriteString("a")
	for i := range 200 {
		f := " w" + string(rune('a'+i%26))
		all.WriteString(f)
		st.Write(f)
	}
	if err := h.a.Send(h.ctx(), channels.Outbound{Channel: Name, ChatID: in.ChatID, ThreadID: in.ThreadID, ReplyTo: in.MessageID, Text: all.String(), Streamed: true}); err != nil {
		t.Fatal(err)
	}
	if ups := h.fake.Updates(); len(ups) != 1 || ups[0].Text != all.String() {
		t.Errorf("updates = %d (%+v), want the final one only", len(ups), ups)
	}
	if n := len(h.fake.Posts()); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
}

// A short answer, done before the first post was due, is posted once as
// before streaming; a reply the stream did not show (Streamed false) still
// ends as the final text.
func TestStreamShortAnswerPostedOnce(t *testing.T) {
	h := startHarness(t, harnessOpts{adapter: func(a *Adapter) { a.streamDelay = time.Hour }})
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("Hi ")
	st.Write("there.")
	if err := h.a.Send(h.ctx(), channels.ReplyTo(in, channels.KindReply, "Hi there!")); err != nil {
		t.Fatal(err)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "Hi there!" || len(h.fake.Updates()) != 0 {
		t.Errorf("posts = %+v, updates = %+v", posts, h.fake.Updates())
	}
}

// An answer longer than one message streams into more than one, and ends
// split as an unstreamed one would be.
func TestStreamLongAnswerSplit(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	line := strings.Repeat("word ", 19) + "\n"
	var all strings.Builder
	for range 1000 { // about 100,000 characters: 3 parts
		all.WriteString(line)
		st.Write(line)
	}
	final := strings.TrimSpace(all.String())
	if err := h.a.Send(h.ctx(), channels.Outbound{Channel: Name, ChatID: in.ChatID, ThreadID: in.ThreadID, ReplyTo: in.MessageID, Text: final, Streamed: true}); err != nil {
		t.Fatal(err)
	}
	want := channels.SplitMessage(toMrkdwn(final), MaxMessageLen)
	posts := h.fake.Posts()
	if len(posts) != len(want) {
		t.Fatalf("%d messages, want %d", len(posts), len(want))
	}
	for i, p := range posts {
		if p.Text != want[i] || p.ThreadTS != in.ThreadID {
			t.Errorf("message %d differs from the split reply (%d vs %d chars)", i, len(p.Text), len(want[i]))
		}
	}
}

// A step before a tool call keeps its message; the answer starts a new
// one. An error ends the stream with the shown text kept and the error
// posted after it.
func TestStreamStepsAndErrors(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("Let me look.")
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	st.Break()
	st.Write("Found it")
	if _, err := h.fake.WaitPosts(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	if err := h.a.Send(h.ctx(), channels.ReplyTo(in, channels.KindError, "Stopped.")); err != nil {
		t.Fatal(err)
	}
	posts := h.fake.Posts()
	if len(posts) != 3 || posts[0].Text != "Let me look." || posts[1].Text != "Found it" || posts[2].Text != "Stopped." {
		t.Errorf("posts = %+v", posts)
	}
}

// A 429 on an edit pauses the edits; the final text still arrives.
func TestStreamRateLimitedEdit(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("one")
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	h.fake.RateLimitNextUpdate(time.Second)
	st.Write(" two")
	if err := h.fake.WaitCalls(h.ctx(), "chat.update", 1); err != nil {
		t.Fatal(err)
	}
	out := channels.ReplyTo(in, channels.KindReply, "one two three")
	out.Streamed = true
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "one two three" {
		t.Errorf("posts = %+v", posts)
	}
}

// Leaked reasoning is not shown while the answer streams.
func TestStreamHidesReasoning(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("<think>private musing")
	st.Write("</think>")
	st.Write("Public.")
	posts, err := h.fake.WaitPosts(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	out := channels.ReplyTo(in, channels.KindReply, "Public.")
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	for _, p := range posts {
		if strings.Contains(p.Text, "musing") {
			t.Errorf("reasoning was posted: %q", p.Text)
		}
	}
	for _, u := range h.fake.Updates() {
		if strings.Contains(u.Text, "musing") {
			t.Errorf("reasoning was shown: %q", u.Text)
		}
	}
}

// A stream whose posts keep failing stops trying, and the final reply is
// still posted once.
func TestStreamGivesUpAfterFailures(t *testing.T) {
	h := streamHarness(t, 0)
	in := mentionIn(h)
	for range streamFailures {
		h.fake.FailNextPost(500)
	}
	st := h.a.StartStream(in).(*stream)
	st.Write("doomed")
	select {
	case <-st.exited:
	case <-h.ctx().Done():
		t.Fatal("the stream never gave up")
	}
	if err := h.a.Send(h.ctx(), channels.ReplyTo(in, channels.KindReply, "final")); err != nil {
		t.Fatal(err)
	}
	if posts := h.fake.Posts(); len(posts) != 1 || posts[0].Text != "final" {
		t.Errorf("posts = %+v", posts)
	}
}

// The streams share one chat.update allowance: a burst, then the rate.
func TestEditBudget(t *testing.T) {
	b := newEditBudget(60, 3)
	now := time.Unix(1000, 0)
	for i := range 3 {
		if !b.take(now) {
			t.Fatalf("edit %d of the burst refused", i+1)
		}
	}
	if b.take(now) {
		t.Error("an edit past the burst went through")
	}
	if b.take(now.Add(500 * time.Millisecond)) {
		t.Error("half a token spent")
	}
	if !b.take(now.Add(time.Second)) {
		t.Error("a second later, no edit")
	}
	if !b.take(now.Add(time.Hour)) || !b.take(now.Add(time.Hour)) || !b.take(now.Add(time.Hour)) || b.take(now.Add(time.Hour)) {
		t.Error("an hour later, not exactly the burst")
	}
}

// Out of allowance, a stream skips its edits (no failure, no 429) and the
// final text still arrives.
func TestStreamWithoutEditBudget(t *testing.T) {
	h := streamHarness(t, time.Millisecond)
	h.a.edits = newEditBudget(0, 0)
	in := mentionIn(h)
	st := h.a.StartStream(in)
	st.Write("one")
	if _, err := h.fake.WaitPosts(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	st.Write(" two")
	out := channels.ReplyTo(in, channels.KindReply, "one two")
	out.Streamed = true
	if err := h.a.Send(h.ctx(), out); err != nil {
		t.Fatal(err)
	}
	if ups := h.fake.Updates(); len(ups) != 1 || ups[0].Text != "one two" {
		t.Errorf("updates = %+v, want only the final", ups)
	}
}
