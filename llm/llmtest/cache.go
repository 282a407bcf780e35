package llmtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// OpenAI's prompt cache, as its documentation describes it: only a prompt
// of at least cacheMinTokens tokens is cached, and a hit covers the
// longest prefix shared with an earlier request, in whole blocks of
// cacheBlock tokens.
const (
	cacheMinTokens = 1024
	cacheBlock     = 128
)

// unitsKept is how many requests' worth of tokenized units stay memoized:
// a conversation's next request repeats nearly every message of the last
// few, and the memo must not grow with the whole run.
const unitsKept = 8

// promptCache counts a request's prompt the way a provider sees it and
// remembers every prefix it has served, in blocks of cacheBlock tokens.
//
// The prompt is the tools' JSON (providers put the tool definitions
// before the conversation), then each message's JSON in order, all under
// the request's model (caches are per model). Each part is tokenized on
// its own with cl100k_base, as a provider renders each message between
// its own delimiters. A prefix is remembered as a chain of hashes, one per
// block, so a hit is found by walking the new request's chain while the
// set holds it. Nothing is ever evicted: a provider keeps a prefix for
// minutes after its last use, and a test runs in less.
type promptCache struct {
	mu     sync.Mutex
	codec  *codec.Codec
	seed   maphash.Seed
	blocks map[uint64]struct{}
	units  map[uint64]memoUnit
	gen    int
}

type memoUnit struct {
	tokens []uint
	used   int // gen of the last request that used it
}

func newPromptCache() *promptCache {
	return &promptCache{seed: maphash.MakeSeed(), blocks: map[uint64]struct{}{}, units: map[uint64]memoUnit{}}
}

// observe counts body's prompt tokens and how many of them an earlier
// request already sent, as OpenAI reports cached_tokens; then it
// remembers body's prefixes. A body that cannot be read counts nothing.
func (c *promptCache) observe(body []byte) (prompt, cached int) {
	var top struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	if json.Unmarshal(body, &top) != nil {
		return 0, 0
	}
	units := make([][]byte, 0, 1+len(top.Messages))
	if t := bytes.TrimSpace(top.Tools); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		units = append(units, t)
	}
	for _, m := range top.Messages {
		units = append(units, m)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	var tokens []uint
	for _, u := range units {
		tokens = append(tokens, c.tokenize(u)...)
	}
	c.forget()

	h := maphash.String(c.seed, top.Model)
	matched, hit := 0, true
	var buf [8 + 4*cacheBlock]byte
	for end := cacheBlock; end <= len(tokens); end += cacheBlock {
		b := binary.LittleEndian.AppendUint64(buf[:0], h)
		for _, t := range tokens[end-cacheBlock : end] {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
		h = maphash.Bytes(c.seed, b)
		if _, ok := c.blocks[h]; hit && ok {
			matched = end
		} else {
			hit = false
		}
		c.blocks[h] = struct{}{}
	}
	prompt = len(tokens)
	if prompt < cacheMinTokens || matched < cacheMinTokens {
		return prompt, 0
	}
	return prompt, matched
}

// tokenize returns u's cl100k tokens, from the memo when a recent request
// held the same part.
func (c *promptCache) tokenize(u []byte) []uint {
	k := maphash.Bytes(c.seed, u)
	if m, ok := c.units[k]; ok {
		m.used = c.gen
		c.units[k] = m
		return m.tokens
	}
	if c.codec == nil {
		c.codec = codec.NewCl100kBase() // about 10 ms, once per server
	}
	ids, _, err := c.codec.Encode(string(u))
	if err != nil {
		// The codec fails only if its split pattern does: one token per
		// byte still counts every byte and never matches by accident.
		ids = make([]uint, len(u))
		for i, b := range u {
			ids[i] = 1<<20 + uint(b)
		}
	}
	c.units[k] = memoUnit{tokens: ids, used: c.gen}
	return ids
}

// count returns the cl100k tokens of s.
func (c *promptCache) count(s string) int {
	if s == "" {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tokenize([]byte(s)))
}

// forget drops memoized parts no request of the last unitsKept used.
func (c *promptCache) forget() {
	for k, m := range c.units {
		if c.gen-m.used >= unitsKept {
			delete(c.units, k)
		}
	}
}
