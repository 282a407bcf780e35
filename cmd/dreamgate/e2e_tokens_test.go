package main

import (
	"strings"
	"testing"
)

// TestPromptCacheKeyConfig: llm.promptCacheKey sends a hash of the
// conversation to an endpoint that is not OpenAI's; off (the default),
// nothing unknown is sent.
func TestPromptCacheKeyConfig(t *testing.T) {
	h := newHarness(t)
	for _, on := range []bool{false, true, true} {
		h.set("llm.promptCacheKey", on)
		if r := h.run("chat", "--session", "planning", "-m", "hello"); r.code != 0 {
			t.Fatalf("promptCacheKey %v: exit %d: %s", on, r.code, r.stderr)
		}
	}
	reqs := h.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if reqs[0].CacheKey != "" || strings.Contains(string(reqs[0].Body), "prompt_cache_key") {
		t.Errorf("off: prompt_cache_key %q sent", reqs[0].CacheKey)
	}
	if k := reqs[1].CacheKey; k == "" || strings.Contains(k, "planning") || reqs[2].CacheKey != k {
		t.Errorf("on: keys %q then %q, want one stable hash that does not name the session", k, reqs[2].CacheKey)
	}
}
