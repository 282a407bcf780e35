package slack

import (
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
)

// memPosts is a post record in memory, shared by the adapters of a test as
// the store's is by processes.
type memPosts struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *memPosts) Posted(key string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[key]
	return ok, nil
}

func (p *memPosts) Record(key, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[key] = id
	return nil
}

// An answer posted by a process that died before recording its message
// answered is sent again by the next one (a restart, a takeover): each
// part carries its key in the message metadata, and the part Slack already
// shows is not posted twice, the part it lacks is.
func TestAnswerSentAgainIsPostedOnce(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	ctx := h.ctx()
	long := strings.Repeat("word ", MaxMessageLen/5+100) // two parts
	in := channels.Inbound{Channel: Name, ChatID: "C1", ThreadID: "1700000000.000100", MessageID: "1700000000.000100"}
	out := channels.ReplyTo(in, channels.KindReply, long)
	out.Key = channels.AnswerKey(in)
	// The first process posted part 1 and died before part 2.
	parts := channels.SplitMessage(toMrkdwn(long), MaxMessageLen)
	first := out
	first.Text = parts[0]
	if err := h.a.Send(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The next process sends the answer again: part 1 is found in
	// Slack's messages by its metadata, part 2 is posted.
	out.Again = true
	if err := h.a.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	// Once more: nothing new.
	if err := h.a.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	posts := h.fake.Posts()
	if len(posts) != 2 {
		t.Fatalf("%d posts after the answer was sent again, want 2", len(posts))
	}
	for i, p := range posts {
		if p.Metadata["event_payload"].(map[string]any)["id"] != channels.PostKey(out.Key, i) {
			t.Errorf("part %d carries %v, want its key", i+1, p.Metadata)
		}
	}
}

// With the store's post record, a part recorded as posted is not even
// looked for in Slack's messages.
func TestRecordedPostIsNotLookedFor(t *testing.T) {
	posts := &memPosts{}
	h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.Posts = posts }})
	ctx := h.ctx()
	in := channels.Inbound{Channel: Name, ChatID: "C1", MessageID: "1700000000.000200"}
	out := channels.ReplyTo(in, channels.KindReply, "the answer")
	out.Key = channels.AnswerKey(in)
	if err := h.a.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if ok, _ := posts.Posted(channels.PostKey(out.Key, 0)); !ok {
		t.Fatal("the post was not recorded")
	}
	reads := h.fake.CallCount("conversations.history")
	out.Again = true
	if err := h.a.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fake.Posts()); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
	if h.fake.CallCount("conversations.history") != reads {
		t.Error("Slack was asked about a post the record holds")
	}
}
