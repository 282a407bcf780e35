package llm

import (
	"regexp"
	"strings"
	"testing"
)

// safeCode admits exactly what the pattern it replaced admitted.
func TestSafeCode(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)
	for _, s := range []string{
		"context_length_exceeded", "invalid_api_key", "rate-limit.v2", "A9",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "",
		"has space", "quote\"d", "line\nbreak", "naïve", "sk-…", "{\"x\":1}", "a/b", "50%",
	} {
		want := ""
		if pattern.MatchString(s) {
			want = s
		}
		if got := safeCode(s); got != want {
			t.Errorf("safeCode(%q) = %q, want %q", s, got, want)
		}
	}
	if got := safeCode(42); got != "" {
		t.Errorf("safeCode(42) = %q, want empty", got)
	}
}
