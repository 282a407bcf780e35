package consolidator

import (
	"github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/llm"
)

// MessageOverhead is what every chat message costs beyond its text (role and
// separators), as nanobot counts it.
const MessageOverhead = 4

// Counter counts cl100k_base tokens, offline: the project's one
// tokenizer (internal/tokens), with the count of a chat message as nanobot
// makes it. The vocabulary is loaded the first time an exact count is
// needed, never before: a gateway that only chats in small sessions never
// loads it. Safe for concurrent use; one serves the process (the prompt's
// memory budget and Dream count with it too).
type Counter struct{ tokens.Counter }

// NewCounter returns a Counter; it loads nothing yet.
func NewCounter() *Counter { return &Counter{} }

// UpperBound is a cheap bound on the tokens of s: a byte-level BPE token
// covers at least one byte, so there are never more tokens than UTF-8 bytes.
func UpperBound(s string) int { return tokens.UpperBound(s) }

// Message counts one chat message as it is sent: its content, each tool
// call's id, name and arguments, the tool call id and the tool name, plus
// MessageOverhead.
func (c *Counter) Message(m llm.Message) int {
	n := MessageOverhead + c.Count(m.Content) + c.Count(m.ToolCallID) + c.Count(m.Name)
	for _, tc := range m.ToolCalls {
		n += c.Count(tc.ID) + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return n
}

// MessageUpperBound bounds Message(m) without the tokenizer: its texts'
// tokens.Bound (about two thirds of their bytes for prose, never fewer
// than their tokens), so that a conversation of a few thousand tokens, in
// more bytes than its budget has tokens, still needs no exact count.
func MessageUpperBound(m llm.Message) int {
	n := MessageOverhead + tokens.Bound(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + tokens.Bound(tc.Arguments)
	}
	return n
}
