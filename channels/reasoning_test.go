package channels

import (
	"strings"
	"testing"
)

func TestVisibleHidesReasoning(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<think>hmm, the user", ""},
		{"<think>hmm</think>The answer", "The answer"},
		{"plan quietly</think>Answer", "Answer"},
		{"Answer <thi", "Answer"},
		{"Answer </th", "Answer"},
		{"<|channel|>analysis<|message|>x", ""},
		{"a < b", "a < b"},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReasoningFilterAppendsOnlyVisibleText(t *testing.T) {
	var f ReasoningFilter
	var out strings.Builder
	for _, frag := range []string{"<think>", "secret", "</think>", "The visible", " answer."} {
		out.WriteString(f.Write(frag))
	}
	if out.String() != "The visible answer." || f.Shown() != out.String() {
		t.Errorf("shown %q (Shown %q)", out.String(), f.Shown())
	}
	f.Reset()
	out.Reset()
	// Text shown before a stray closing tag cannot be taken back: the
	// filter stops rather than show the answer glued to it.
	for _, frag := range []string{"Plan", "</think>", "Answer"} {
		out.WriteString(f.Write(frag))
	}
	if out.String() != "Plan" {
		t.Errorf("after a stray closing tag shown %q", out.String())
	}
}
