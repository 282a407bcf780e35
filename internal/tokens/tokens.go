// Package tokens counts the tokens of a text the one way the project does:
// cl100k_base, offline. The consolidator budgets chat prompts and archive
// calls with it, the gateway fits each scope's memory into its budget
// with it, and Dream decides when a scope's memory needs a deep Dream with
// it, so that the three agree on what a budget holds.
//
// A leaf: it imports nothing of dreamgate's.
package tokens

import (
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Counter counts cl100k_base tokens. The vocabulary (about 6 MB of
// resident memory and 10 ms to build) is loaded the first time a count is
// needed, never before: a process that never counts never loads it. Only
// the codec package is imported, so the other encodings' vocabularies are
// not linked into the binary. The zero value is ready to use; safe for
// concurrent use. Share one per process.
type Counter struct {
	once   sync.Once
	codec  *codec.Codec
	loaded atomic.Bool
}

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
