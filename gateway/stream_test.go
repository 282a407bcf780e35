package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// streamRecorder is a recorder that streams: it logs what its Stream shows,
// with "|" for a Break.
type streamRecorder struct {
	*recorder
	mu    sync.Mutex
	shown strings.Builder
}

func (s *streamRecorder) StartStream(channels.Inbound) channels.Stream { return s }
func (s *streamRecorder) Write(f string)                               { s.mu.Lock(); s.shown.WriteString(f); s.mu.Unlock() }
func (s *streamRecorder) Break()                                       { s.mu.Lock(); s.shown.WriteString("|"); s.mu.Unlock() }
func (s *streamRecorder) text() string                                 { s.mu.Lock(); defer s.mu.Unlock(); return s.shown.String() }

// streamingModel streams each answer's text in two fragments when the
// request asks for it, as the llm client does.
func streamingModel(answers ...llm.Response) func(context.Context, llm.Request) (llm.Response, error) {
	var mu sync.Mutex
	return func(_ context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		resp := answers[0]
		answers = answers[1:]
		mu.Unlock()
		if req.OnDelta != nil && resp.Content != "" {
			half := len(resp.Content) / 2
			req.OnDelta(resp.Content[:half])
			req.OnDelta(resp.Content[half:])
		}
		return resp, nil
	}
}

func TestStreamedTurn(t *testing.T) {
	look := llm.Response{Content: "Let me look.", FinishReason: llm.FinishToolCalls,
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"USER.md"}`}}}
	env := newTestEnv(t, streamingModel(look, textReply("  You are Ana.\n")), nil)
	sr := &streamRecorder{recorder: newRecorder("stream")}
	env.g.AddChannel(sr)
	in := inbound("s", "who am I?")
	in.Channel = "stream"
	r := wait(t, must(env.g.Submit(t.Context(), in)))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	out := sr.next(t)
	// The final reply is sent once, marked as already shown; the step
	// before the tool call was shown and broken off.
	if out.Text != "You are Ana." || !out.Streamed {
		t.Errorf("reply = %q streamed %v, want the trimmed reply, streamed", out.Text, out.Streamed)
	}
	if got := sr.text(); got != "Let me look.|  You are Ana.\n" {
		t.Errorf("stream showed %q", got)
	}
	// What is saved is the same as without streaming.
	sess, _ := env.sessions.Get("test:s")
	if msgs := sess.Messages(); len(msgs) != 4 || msgs[len(msgs)-1].Content != "  You are Ana.\n" {
		t.Errorf("saved = %+v, want user, tool call, tool result, the model's reply", msgs)
	}
}

// A reply the stream did not show in full (the model's text differs from
// what the loop returns, e.g. the max-iterations notice) is sent in full;
// a channel without a Stream gets no streamed request.
func TestStreamOnlyWhereShown(t *testing.T) {
	call := func(id string) llm.Response {
		return llm.Response{FinishReason: llm.FinishToolCalls,
			ToolCalls: []llm.ToolCall{{ID: id, Name: "list_dir", Arguments: `{"path":"."}`}}}
	}
	env := newTestEnv(t, streamingModel(call("a"), call("b"), textReply("plain")), func(c *Config, _ *Deps) {
		c.MaxToolIterations = 2
	})
	sr := &streamRecorder{recorder: newRecorder("stream")}
	env.g.AddChannel(sr)
	in := inbound("m", "loop")
	in.Channel = "stream"
	wait(t, must(env.g.Submit(t.Context(), in)))
	if out := sr.next(t); out.Streamed || !strings.Contains(out.Text, "too many tool steps") {
		t.Errorf("max-iterations reply = %q streamed %v", out.Text, out.Streamed)
	}

	wait(t, must(env.g.Submit(t.Context(), inbound("plain", "hi"))))
	if out := env.ch.next(t); out.Streamed || out.Text != "plain" {
		t.Errorf("reply on a channel without streams = %+v", out)
	}
	for _, req := range env.model.Requests() {
		last := req.Messages[len(req.Messages)-1]
		if last.Content == "hi" && req.OnDelta != nil {
			t.Error("a channel without a Stream got a streamed request")
		}
	}
}

// Channels show a stream without its leaked reasoning, and the reply has
// it stripped: a reply that was shown that way is marked streamed, so it
// is not shown twice.
func TestStreamedReplyWithReasoning(t *testing.T) {
	env := newTestEnv(t, streamingModel(textReply("<think>secret</think>The visible answer.")), nil)
	sr := &streamRecorder{recorder: newRecorder("stream")}
	env.g.AddChannel(sr)
	in := inbound("r", "hi")
	in.Channel = "stream"
	wait(t, must(env.g.Submit(t.Context(), in)))
	if out := sr.next(t); out.Text != "The visible answer." || !out.Streamed {
		t.Errorf("reply = %q streamed %v, want the stripped reply, streamed", out.Text, out.Streamed)
	}
}
