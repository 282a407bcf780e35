package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
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

// An argument a command does not take is refused with exit 2 and one line
// naming it, never dropped: `chat -m hi there` sent only "hi" before.
func TestExtraArgumentsAreRefused(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chat", "-m", "hi", "there"}, `dreamgate chat: unexpected argument "there"; put a message of several words in quotes: -m "hi there"`},
		{[]string{"chat", "hello"}, `dreamgate chat: unexpected argument "hello" (see dreamgate chat -h)`},
		{[]string{"status", "now"}, `dreamgate status: unexpected argument "now" (see dreamgate status -h)`},
		{[]string{"dream", "log", "abc", "def"}, `dreamgate dream log: unexpected argument "def" (see dreamgate dream log -h)`},
		{[]string{"chat", "--session", strings.Repeat("a", 65), "-m", "hi"}, "dreamgate chat: --session must be 1 to 64 characters (at most 128 bytes), without control characters"},
		{[]string{"chat", "--session", strings.Repeat("😀", 40), "-m", "hi"}, "dreamgate chat: --session must be 1 to 64 characters (at most 128 bytes), without control characters"},
		{[]string{"chat", "--session", "", "-m", "hi"}, "dreamgate chat: --session must be 1 to 64 characters (at most 128 bytes), without control characters"},
	} {
		res := h.run(tc.args...)
		if res.code != 2 || strings.TrimSpace(res.stderr) != tc.want || res.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, res.code, res.stdout, res.stderr, tc.want)
		}
	}
	if n := len(h.llm.Requests()); n != 0 {
		t.Errorf("a refused command reached the model %d times", n)
	}
	// The longest name allowed works (its files' names fit).
	if res := h.run("chat", "--session", strings.Repeat("é", 64), "-m", "hi"); res.code != 0 || strings.TrimSpace(res.stdout) != "hello" {
		t.Errorf("a 64-character session: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// A one-shot turn that ends without the model's answer (here an empty
// one) prints the notice and exits 1: a script must not take the notice
// for an answer.
func TestOneShotWithoutAnAnswerExitsOne(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("") })
	res := h.run("chat", "-m", "hi")
	if res.code != 1 || !strings.Contains(res.stdout+res.stderr, "empty answer") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and the empty-answer notice", res.code, res.stdout, res.stderr)
	}
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	if res := h.run("chat", "-m", "hi"); res.code != 0 || strings.TrimSpace(res.stdout) != "hello" {
		t.Fatalf("answered: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
