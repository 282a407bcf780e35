package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `dreamgate memory edit` given what it cannot take says so in one
// sentence and changes nothing: an empty content (standard input, a file
// of blanks, an editor that emptied the copy), a scope folder's file typed
// as its path instead of with --scope, a path outside the memory files,
// --scope without a name or with one no scope can have, an editor that
// failed. Each leaves the memory and its history as they were. A --scope
// memory has none of begins that scope, and says so. On either engine (it
// is in the PostgreSQL pass).
func TestMemoryEditRefusesBadInput(t *testing.T) {
	h := newHarness(t)
	const before = "# User\n\n- Ana prefers green tea.\n"
	first := filepath.Join(t.TempDir(), "user.md")
	if err := os.WriteFile(first, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("memory", "edit", "--from", first, "USER.md"); r.code != 0 {
		t.Fatalf("memory edit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	historyBefore := memoryHistory(t, h.ws)
	blanks := filepath.Join(t.TempDir(), "blanks.md")
	emptier := filepath.Join(t.TempDir(), "emptier.sh")
	failing := filepath.Join(t.TempDir(), "failing.sh")
	for p, text := range map[string]string{blanks: " \n\n\t\n", emptier: "#!/bin/sh\n: > \"$1\"\n", failing: "#!/bin/sh\nexit 3\n"} {
		if err := os.WriteFile(p, []byte(text), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, want string
		env, args  []string
		usage      bool // the flag package's error, followed by the usage
	}{
		{"empty standard input", "the new content of USER.md is empty: nothing was changed", nil, []string{"--from", "-", "USER.md"}, false},
		{"a file of blanks", "the new content of USER.md is empty: nothing was changed", nil, []string{"--from", blanks, "USER.md"}, false},
		{"an editor that emptied it", "the new content of USER.md is empty: nothing was changed", []string{"VISUAL=" + emptier}, []string{"USER.md"}, false},
		{"an editor that failed", "nothing was changed", []string{"VISUAL=" + failing}, []string{"USER.md"}, false},
		{"a scope's file without --scope", "dreamgate memory edit --scope team-slack-t1 memory/MEMORY.md", nil, []string{"--from", blanks, "scopes/team-slack-t1/memory/MEMORY.md"}, false},
		{"a file outside memory", `"../USER.md" is not a memory file`, nil, []string{"--from", blanks, "../USER.md"}, false},
		{"a file of the workspace", `"AGENTS.md" is not a memory file`, nil, []string{"--from", blanks, "AGENTS.md"}, false},
		{"a missing file", "read the new content", nil, []string{"--from", filepath.Join(t.TempDir(), "nothing.md"), "USER.md"}, false},
		{"--scope without a name", "flag needs an argument: -scope", nil, []string{"--scope"}, true},
		{"a scope no scope can be", "not a memory scope", nil, []string{"--scope", "../team", "--from", blanks, "USER.md"}, true},
	} {
		r := h.runEnv(c.env, append([]string{"memory", "edit"}, c.args...)...)
		first, _, _ := strings.Cut(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || !strings.Contains(first, c.want) {
			t.Errorf("%s: exit %d, first line %q, want %q\n%s%s", c.name, r.code, first, c.want, r.stdout, r.stderr)
		}
		if !c.usage {
			oneSentence(t, r.stderr)
		}
	}
	help := h.run("memory", "edit", "-h")
	if usage := help.stdout + help.stderr; !strings.Contains(usage, `"default" for the workspace root's files (the default)`) || strings.Contains(usage, "every scope") {
		t.Errorf("memory edit -h says --scope's default wrongly:\n%s", usage)
	}
	if got := string(readMemoryFile(t, h.ws, "USER.md")); got != before {
		t.Errorf("USER.md after the refused edits: %q, was %q", got, before)
	}
	if after := memoryHistory(t, h.ws); after != historyBefore {
		t.Errorf("the history after the refused edits:\n%s\nwas:\n%s", after, historyBefore)
	}

	from := filepath.Join(t.TempDir(), "team.md")
	if err := os.WriteFile(from, []byte("- The team ships on Fridays.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("memory", "edit", "--scope", "team-slack-tnew", "--from", from, "memory/MEMORY.md")
	if r.code != 0 || !strings.Contains(r.stdout, "The team-slack-tnew scope had no memory before: this edit began it") {
		t.Errorf("an edit of a scope memory has none of: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// memoryHistory is every commit of ws's memory repository, newest first.
func memoryHistory(t *testing.T, ws string) string {
	t.Helper()
	dir, _, err := memoryRepoDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return gitCLI(t, dir, "log", "--all", "--date-order", "--format=%H %s")
}
