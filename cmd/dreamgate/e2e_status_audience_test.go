package main

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// /status in a Slack channel, through the binary and the Slack fake,
// counts the channel's own tokens: not the gateway's totals, which hold
// what Ana's long DM cost.
func TestStatusInAChannelCountsItsOwnTokensThroughSlack(t *testing.T) {
	h := newHarness(t)
	w, anaDM, _, general := slackPeople(t, h)
	w.users[general.key] = "UBOB"
	costing := func(text string, in, out int) llmtest.Reply {
		r := llmtest.Text(text)
		r.Usage = &llm.Usage{PromptTokens: in, CompletionTokens: out}
		return r
	}
	h.llm.Push(costing("A long answer.", 77777, 777))
	w.say(t, anaDM, "tell me at length about my salary")
	h.llm.Push(costing("Hello Bob.", 1234, 12))
	w.say(t, general, "hello")

	got := w.say(t, general, "/status")
	if !strings.Contains(got, "Tokens used in this conversation: 1.2k in, 12 out in 1 calls (chat 1.2k)") {
		t.Errorf("#general's /status lacks its own tokens:\n%s", got)
	}
	if strings.Contains(got, "79.0k") || strings.Contains(got, "77.8k") || strings.Contains(got, "789") {
		t.Errorf("#general's /status shows what Ana's DM cost:\n%s", got)
	}
	if got := w.say(t, anaDM, "/status"); !strings.Contains(got, "Tokens used in this conversation: 77.8k in, 777 out in 1 calls") {
		t.Errorf("Ana's /status:\n%s", got)
	}
}
