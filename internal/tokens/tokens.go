// Package tokens counts the tokens of a text the one way the project does:
// cl100k_base, offline. The consolidator budgets chat prompts and archive
// calls with it, the gateway fits each scope's memory into its budget
// with it, and Dream decides when a scope's memory needs a deep Dream with
// it, so that the three agree on what a budget holds.
//
// The counter is this package's own, with the vocabulary in a compact form
// (vocab.go); its counts are tiktoken-go's (github.com/tiktoken-go/tokenizer),
// which the tests hold it to, text by text.
//
// A leaf: it imports nothing of dreamgate's.
package tokens

//go:generate go run github.com/dlclark/regexp2cg@v0.9.1 -o split_regexp2cg.go

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Counter counts cl100k_base tokens. The vocabulary's table (1 MiB) and the
// split pattern are built the first time a count is needed, in about a
// millisecond, never before: a process that never counts never builds them.
// The zero value is ready to use; safe for concurrent use. Share one per
// process.
type Counter struct {
	once   sync.Once
	vocab  *table
	split  *regexp2.Regexp
	loaded atomic.Bool
	runes  sync.Pool // of *[]rune: a text's runes, for the pattern
}

// Count returns the number of cl100k_base tokens in s. A text that is not
// valid UTF-8 is counted as cl100k's reference does: each invalid byte as
// U+FFFD.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	c.once.Do(c.load)
	buf, _ := c.runes.Get().(*[]rune)
	if buf == nil {
		buf = new([]rune)
	}
	defer c.runes.Put(buf)
	runes := (*buf)[:0]
	for _, r := range s {
		runes = append(runes, r)
	}
	*buf = runes
	n := 0
	for len(runes) > 0 {
		// A few pieces at a time, as rune indexes into what is left:
		// matching them one by one (FindNextMatch) allocates a match
		// for each, about 300 bytes a token, and all of a text's at once
		// a slice grown by doubling; in a one-shot counting a whole
		// conversation either grew the heap most. The pattern looks
		// ahead, never behind, so matching what is left matches on. It
		// matches runes: an invalid byte is U+FFFD in a piece, as in the
		// reference.
		found, err := c.split.FindAllRunesIndex(runes, piecesAtATime)
		if err != nil {
			// The pattern fails only on a match timeout, which it has
			// none of; the bound is a safe over-estimate.
			return Bound(s)
		}
		for _, at := range found {
			n += c.pieceTokens(runes[at[0]:at[1]])
		}
		if len(found) < piecesAtATime {
			break
		}
		runes = runes[found[len(found)-1][1]:]
	}
	return n
}

// piecesAtATime is how many pieces of a text are matched at a time.
const piecesAtATime = 8

// pieceTokens counts the tokens of one piece of a text.
func (c *Counter) pieceTokens(runes []rune) int {
	var buf [64]byte
	piece := buf[:0]
	for _, r := range runes {
		piece = utf8.AppendRune(piece, r)
	}
	if _, ok := c.vocab.rank(piece); ok {
		return 1
	}
	return c.vocab.parts(piece)
}

func (c *Counter) load() {
	c.vocab = newTable()
	// cl100k_base's pattern: a text is first cut into pieces (words with
	// the character before them, up to three digits, runs of punctuation,
	// runs of spaces), and no token straddles two pieces. MustCompile
	// finds the matcher that split_regexp2cg.go registers for it, Go that
	// regexp2cg generated from it, as tiktoken-go's is (its behaviour is
	// the reference's, down to how it cuts runs of spaces and newlines).
	splitRegexp := regexp2.MustCompile(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, regexp2.None)
	c.split = splitRegexp
	c.loaded.Store(true)
}

// Loaded reports whether the vocabulary has been built.
func (c *Counter) Loaded() bool { return c.loaded.Load() }

// UpperBound is a cheap bound on the tokens of s: a byte-level BPE token
// covers at least one byte, so there are never more tokens than UTF-8 bytes.
func UpperBound(s string) int { return len(s) }
