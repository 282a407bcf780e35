package main

import (
	"bytes"
	"regexp"
	"testing"
)

// --help lists each command once.
func TestHelpListsEachCommandOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"--help"}, &bytes.Buffer{}, &out, &errOut, func(string) string { return "" })
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+(?: [a-z]+)?)`).FindAllStringSubmatch(errOut.String(), -1) {
		if seen[m[1]] {
			t.Errorf("--help lists %q twice:\n%s", m[1], errOut.String())
		}
		seen[m[1]] = true
	}
	for _, cmd := range []string{"onboard", "gateway", "chat", "dream run", "dream log", "dream restore", "status", "version", "eval"} {
		if !seen[cmd] {
			t.Errorf("--help lacks %q", cmd)
		}
	}
}
