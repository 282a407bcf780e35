package discord

import (
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
)

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

// The same answer sent twice (a process that died before recording its
// message answered, and the one that took over) makes one message per
// part: each part's nonce derives from the answer's key, and Discord
// answers a repeated nonce with the message it made.
func TestAnswerSentTwiceIsPostedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	in := channels.Inbound{Channel: Name, ChatID: "C1", MessageID: "M1"}
	out := channels.ReplyTo(in, channels.KindReply, strings.Repeat("word ", 500)) // two parts
	out.Key = channels.AnswerKey(in)
	h.send(out)
	out.Again = true
	h.send(out)
	sent := h.fake.Sent()
	if len(sent) != 2 {
		t.Fatalf("%d messages, want the 2 parts once", len(sent))
	}
	if sent[0].Nonce != channels.PostKey(out.Key, 0) || sent[1].Nonce != channels.PostKey(out.Key, 1) {
		t.Errorf("nonces %q %q, want the parts' keys", sent[0].Nonce, sent[1].Nonce)
	}
}

// The store's post record covers what Discord's nonce window no longer
// does: a recorded part is not posted again.
func TestRecordedPartIsNotPostedAgain(t *testing.T) {
	t.Parallel()
	posts := &memPosts{}
	h := newHarness(t, harnessOpts{cfg: Config{Posts: posts}})
	in := channels.Inbound{Channel: Name, ChatID: "C1", MessageID: "M2"}
	out := channels.ReplyTo(in, channels.KindReply, "the answer")
	out.Key = channels.AnswerKey(in)
	h.send(out)
	if id := posts.m[channels.PostKey(out.Key, 0)]; id == "" || id != h.fake.Sent()[0].ID {
		t.Fatalf("record %v, want the message's id", posts.m)
	}
	out.Again = true
	h.send(out)
	if n := len(h.fake.Attempts()); n != 1 {
		t.Errorf("%d attempts, want 1: the recorded part is not sent", n)
	}
}
