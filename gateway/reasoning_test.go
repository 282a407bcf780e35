package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// Reasoning a model leaks into its reply is neither shown nor kept.
func TestLeakedReasoningIsNotShownNorKept(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"think", "<think>SECRET the user is Ana</think>\nHello Ana."},
		{"gpt-oss", "<|channel|>analysis<|message|>SECRET greet her<|end|><|start|>assistant<|channel|>final<|message|>Hello Ana.<|return|>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
				return textReply(tc.answer), nil
			}, nil)
			done, err := env.g.Submit(t.Context(), inbound("r-"+tc.name, "hi"))
			if err != nil {
				t.Fatal(err)
			}
			if r := wait(t, done); r.Err != nil || r.Reply != "Hello Ana." {
				t.Fatalf("result = %+v", r)
			}
			if out := env.ch.next(t); out.Text != "Hello Ana." {
				t.Errorf("sent %q", out.Text)
			}
			sess, _ := env.sessions.Get("test:r-" + tc.name)
			for _, m := range sess.Messages() {
				if strings.Contains(m.Content, "SECRET") {
					t.Errorf("the session keeps the reasoning: %q", m.Content)
				}
			}
		})
	}
}
