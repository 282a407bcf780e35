package channels

import "testing"

// Every process derives the same keys, and parts and answers differ.
func TestPostKeys(t *testing.T) {
	in := Inbound{Channel: "slack", ChatID: "C1", MessageID: "1712.000100"}
	k := AnswerKey(in)
	if k != "slack/C1/1712.000100" {
		t.Fatalf("AnswerKey = %q", k)
	}
	if AnswerKey(Inbound{Channel: "terminal"}) != "" {
		t.Error("a message without an id has an answer key")
	}
	p0, p1 := PostKey(k, 0), PostKey(k, 1)
	if len(p0) != 24 || p0 == p1 || p0 != PostKey(k, 0) || p0 == PostKey("slack/C1/1712.000101", 0) {
		t.Errorf("PostKey: %q %q", p0, p1)
	}
}
