package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

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
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+(?: [a-z]+)?)`).FindAllStringSubmatch(out.String(), -1) {
		if seen[m[1]] {
			t.Errorf("--help lists %q twice:\n%s", m[1], out.String())
		}
		seen[m[1]] = true
	}
	for _, cmd := range []string{"onboard", "gateway", "chat", "dream run", "dream log", "dream restore", "status", "version", "eval"} {
		if !seen[cmd] {
			t.Errorf("--help lacks %q", cmd)
		}
	}
}

// Help that is asked for is the answer: on stdout, exit 0, for every
// command. Help after a mistake goes to stderr with exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "Commands:"},
		{[]string{"-h"}, 0, "Commands:"},
		{[]string{"help"}, 0, "Commands:"},
		{[]string{"chat", "--help"}, 0, "-session"},
		{[]string{"gateway", "-h"}, 0, "-terminal"},
		{[]string{"status", "--help"}, 0, "Usage of dreamgate status"},
		{[]string{"eval", "--help"}, 0, "-scenario"},
		{[]string{"dream", "--help"}, 0, "run | log [sha] | restore [sha [keep|all]]"},
		{[]string{"dream", "help"}, 0, "run | log [sha] | restore [sha [keep|all]]"},
		{[]string{"dream", "log", "-h"}, 0, "Usage of dreamgate dream log"},
		{[]string{"onboard", "-h"}, 0, "Usage of dreamgate onboard"},
		{[]string{"version", "-h"}, 0, "Usage of dreamgate version"},
		{[]string{"--bogus"}, 2, "Commands:"},
		{[]string{"chat", "--bogus"}, 2, "-session"},
		{[]string{"dream"}, 2, "run | log [sha] | restore [sha [keep|all]]"},
		{[]string{"dream", "rn"}, 2, `unknown dream command "rn"`},
	} {
		var out, errOut bytes.Buffer
		// No config is read: a help answer, or a mistake, comes first.
		code := run(t.Context(), tc.args, &bytes.Buffer{}, &out, &errOut, func(string) string { return "" })
		where, other := out.String(), errOut.String()
		if tc.code != 0 {
			where, other = other, where
		}
		if code != tc.code || !strings.Contains(where, tc.want) || other != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q on %s only",
				tc.args, code, out.String(), errOut.String(), tc.code, tc.want, map[bool]string{true: "stdout", false: "stderr"}[tc.code == 0])
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

// JSON logs (stderr that is not a terminal) write durations as people read
// them, not as nanoseconds.
func TestJSONLogDurationsAreReadable(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	r := h.runEnv([]string{"DREAMGATE_LOG_LEVEL=debug"}, "chat", "-m", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	seen := 0
	for line := range strings.SplitSeq(r.stderr, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		d, ok := rec["duration"]
		if !ok {
			continue
		}
		seen++
		s, isString := d.(string)
		if _, err := time.ParseDuration(s); !isString || err != nil {
			t.Errorf("duration %v (%T) in %s; want a duration such as \"12ms\"", d, d, line)
		}
	}
	if seen == 0 {
		t.Fatalf("no log line with a duration:\n%s", r.stderr)
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567891 * time.Nanosecond: "1.235s", 340*time.Millisecond + 4321: "340ms",
		1500 * time.Nanosecond: "2µs", 90 * time.Second: "1m30s", 0: "0s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%d) = %q, want %q", d, got, want)
		}
	}
}
