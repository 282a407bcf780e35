package channels

import (
	"strings"

	"github.com/dreamgate/dreamgate/internal/reasoning"
)

// Reasoning some models leak into their text must not reach a channel
// while it streams (the gateway strips it from the final reply): closed
// <think> blocks are left out, an open one hides the rest, a lone closing
// tag hides what came before it, and text with gpt-oss's harmony tokens is
// not shown until the final reply. A tag still being written at the end is
// held back.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// Visible returns the part of a step's streamed text so far that may be
// shown: without leaked reasoning, trimmed. For a finished step without
// harmony tokens it is the text the gateway sends as the final reply.
func Visible(s string) string {
	if strings.Contains(s, "<|") {
		return ""
	}
	s = reasoning.StripThink(s)
	if i := strings.LastIndexByte(s, '<'); i >= 0 {
		if tail := s[i:]; strings.HasPrefix(thinkOpen, tail) || strings.HasPrefix(thinkClose, tail) || strings.HasPrefix("<|", tail) {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

// ReasoningFilter is Visible for a channel that can only append (a
// terminal): Write takes the next fragment and returns the text to append.
// Once the visible text stops growing from what was shown (a closing tag
// came after text already shown, harmony tokens appeared), nothing more is
// returned for the step: shown text cannot be taken back, and the final
// reply then differs from what was shown, so the channel shows it whole.
type ReasoningFilter struct {
	text  strings.Builder
	shown string
	stuck bool
}

// Write adds fragment to the step and returns what newly became visible.
func (f *ReasoningFilter) Write(fragment string) string {
	f.text.WriteString(fragment)
	if f.stuck {
		return ""
	}
	v := Visible(f.text.String())
	if !strings.HasPrefix(v, f.shown) {
		f.stuck = true
		return ""
	}
	add := v[len(f.shown):]
	f.shown = v
	return add
}

// Shown is the text Write has returned since the last Reset.
func (f *ReasoningFilter) Shown() string { return f.shown }

// Reset starts a new step.
func (f *ReasoningFilter) Reset() {
	f.text.Reset()
	f.shown, f.stuck = "", false
}
