package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
)

// cacheKey is what is sent as prompt_cache_key for a conversation: a
// hash of its name, never the name (a session key holds platform ids),
// or "" when the hint is off or there is no conversation. The same name
// gives the same key in every process, so a restart keeps the routing.
func (c *Client) cacheKey(conversation string) string {
	if !c.cacheHint || conversation == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("dreamgate prompt cache\x00" + conversation))
	return "dg-" + hex.EncodeToString(sum[:16])
}

// isOpenAI reports whether baseURL is OpenAI's own API, which takes
// prompt_cache_key.
func isOpenAI(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}
