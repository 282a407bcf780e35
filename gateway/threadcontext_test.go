package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The earlier messages of a new conversation reach the model once, as one
// user message before the person's own, marked as context with names and
// times; the next message of the session carries none again.
func TestContextAddedToNewSessionOnce(t *testing.T) {
	env := newTestEnv(t, func(_ context.Context, _ llm.Request) (llm.Response, error) { return textReply("ok"), nil }, nil)
	at := time.Date(2026, 11, 24, 9, 5, 0, 0, time.UTC)
	in := inbound("t1", "what do you think?")
	in.Context = []channels.ContextMessage{
		{SenderName: "Ana", Text: "the deploy failed again", Time: at},
		{FromBot: true, Text: "It was the migration.", Time: at.Add(time.Minute)},
		{SenderName: "Bo", Text: "should we roll back?", Time: at.Add(2 * time.Minute)},
	}
	if r := wait(t, must(env.g.Submit(t.Context(), in))); r.Err != nil {
		t.Fatal(r.Err)
	}
	env.ch.next(t)
	reqs := env.model.Requests()
	msgs := reqs[0].Messages
	if len(msgs) != 3 || msgs[1].Role != llm.RoleUser || llmtest.Spoken(msgs[2].Content) != "what do you think?" {
		t.Fatalf("request = %+v, want system, the context, the question", msgs)
	}
	want := contextHeader + "\n[2026-11-24 09:05 UTC] Ana: the deploy failed again" +
		"\n[2026-11-24 09:06 UTC] you (the assistant): It was the migration." +
		"\n[2026-11-24 09:07 UTC] Bo: should we roll back?"
	if msgs[1].Content != want {
		t.Errorf("context message =\n%s\nwant\n%s", msgs[1].Content, want)
	}

	// The same session again, with context (a channel that sends it
	// anyway): ignored.
	in2 := inbound("t1", "and now?")
	in2.Context = []channels.ContextMessage{{SenderName: "Cy", Text: "ignored"}}
	if r := wait(t, must(env.g.Submit(t.Context(), in2))); r.Err != nil {
		t.Fatal(r.Err)
	}
	env.ch.next(t)
	reqs = env.model.Requests()
	for _, m := range reqs[1].Messages {
		if strings.Contains(m.Content, "ignored") {
			t.Errorf("an existing session took context: %+v", reqs[1].Messages)
		}
	}
	sess, _ := env.sessions.Get("test:t1")
	if n := strings.Count(joinContents(sess.Messages()), contextHeader); n != 1 {
		t.Errorf("session holds %d context messages, want 1", n)
	}
}

// The context is bounded: the newest messages are kept, and the model is
// told how many older ones are not shown.
func TestContextBounded(t *testing.T) {
	var msgs []channels.ContextMessage
	for i := range 200 {
		msgs = append(msgs, channels.ContextMessage{SenderName: "Ana", Text: strings.Repeat("x", 100) + " #" + string(rune('a'+i%26))})
	}
	msgs[199].Text = "the newest"
	msgs = append(msgs, channels.ContextMessage{SenderName: "Bo", Text: strings.Repeat("y", 10000)})
	got := renderContext(msgs)
	if len(got) > contextTokens*3 {
		t.Errorf("context is %d bytes, over the %d-token bound", len(got), contextTokens)
	}
	if !strings.Contains(got, "the newest") || !strings.Contains(got, "…(cut)") {
		t.Errorf("the newest messages are not kept (or the long one not cut):\n%s", got)
	}
	if !strings.Contains(got, "older messages not shown)") {
		t.Errorf("dropped messages are not said:\n%s", got[:200])
	}
	if renderContext(nil) != "" {
		t.Error("no messages gave a context")
	}
}

func joinContents(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}
