package consolidator

import (
	"sync"
	"sync/atomic"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/tiktoken-go/tokenizer/codec"
)

// MessageOverhead is what every chat message costs beyond its text (role and
// separators), as nanobot counts it.
const MessageOverhead = 4

// Counter counts cl100k_base tokens, offline. The vocabulary (about 6 MB of
// resident memory and 10 ms to build) is loaded the first time an exact count
// is needed, never before: a gateway that only chats in small sessions never
// loads it. Only the codec package is imported, so the other encodings'
// vocabularies are not linked into the binary. Safe for concurrent use.
type Counter struct {
	once   sync.Once
	codec  *codec.Codec
	loaded atomic.Bool
}

// NewCounter returns a Counter; it loads nothing yet.
func NewCounter() *Counter { return &Counter{} }

// Count returns the number of cl100k_base tokens in s.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	c.once.Do(func() {
		c.codec = codec.NewCl100kBase()
		c.loaded.Store(true)
	})
	n, err := c.codec.Count(s)
	if err != nil {
		// The codec fails only if its split pattern does; the byte length
		// is a safe over-estimate.
		return UpperBound(s)
	}
	return n
}

// Loaded reports whether the vocabulary has been built.
func (c *Counter) Loaded() bool { return c.loaded.Load() }

// UpperBound is a cheap bound on the tokens of s: a byte-level BPE token
// covers at least one byte, so there are never more tokens than UTF-8 bytes.
func UpperBound(s string) int { return len(s) }

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

// MessageUpperBound bounds Message(m) without the tokenizer.
func MessageUpperBound(m llm.Message) int {
	n := MessageOverhead + len(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}
