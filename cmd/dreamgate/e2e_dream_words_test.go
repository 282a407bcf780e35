package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// What `dreamgate dream …` and the status commands say, as a user reads
// them: at the command line they name the command-line commands, a Dream
// that finds nothing while a conversation waits unarchived says why, and an
// undone Dream is not shown as the memory's latest change.
func TestDreamWordsAtTheCommandLine(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmtest.Text("Noted: tea, not coffee."))
	if r := h.run("chat", "-m", "I prefer tea over coffee."); r.code != 0 {
		t.Fatalf("chat: %d %s", r.code, r.stderr)
	}

	// The conversation is not archived: Dream cannot see it, and says so.
	r := h.run("dream", "run")
	if r.code != 0 || !strings.Contains(r.stdout, "Dream: nothing new to read: 1 conversation has messages not archived yet, and Dream reads only the archive.") ||
		!strings.Contains(r.stdout, "on /new") {
		t.Errorf("dream run with an unarchived conversation: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	h.llm.Push(llmtest.Text("- The user prefers tea over coffee")) // the archive call of /new
	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: %d %s", r.code, r.stderr)
	}
	h.llm.Push(
		llmtest.Text("[USER] prefers tea over coffee"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## Preferences\n","new_text":"## Preferences\n- Prefers tea over coffee.\n"}`),
		llmtest.Text("Added."),
	)
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "1 change to USER.md") {
		t.Fatalf("dream run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = h.run("dream", "log")
	sha := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(r.stdout)
	if r.code != 0 || sha == nil {
		t.Fatalf("dream log: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noChatSyntax := func(what, text string, wants ...string) {
		t.Helper()
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, text)
			}
		}
		if strings.Contains(text, "/dream-") {
			t.Errorf("%s names a chat command:\n%s", what, text)
		}
	}
	noChatSyntax("dream log", r.stdout, "Undo it with `dreamgate dream restore "+sha[1]+"`")
	r = h.run("dream", "restore")
	noChatSyntax("dream restore", r.stdout, "See one with `dreamgate dream log <sha>`", "with `dreamgate dream restore <sha>`")
	r = h.run("dream", "log", "ffff")
	noChatSyntax("dream log of an unknown sha", r.stderr, "Try `dreamgate dream restore` to list them.")

	if r := h.run("dream", "restore", sha[1]); r.code != 0 {
		t.Fatalf("dream restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("status")
	if !strings.Contains(r.stdout, "Last Dream commit: "+sha[1]) || !strings.Contains(r.stdout, "(undone by ") {
		t.Errorf("status after the undo:\n%s", r.stdout)
	}
	r = h.run("chat", "-m", "/status")
	if !strings.Contains(r.stdout, "commit "+sha[1]+", undone by ") {
		t.Errorf("/status after the undo:\n%s", r.stdout)
	}
	checkStateFiles(t, h.ws)
}
