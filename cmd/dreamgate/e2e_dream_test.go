package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// gitAgrees runs the real git command line on the workspace: the repository
// go-git wrote must be valid, nothing tracked left uncommitted.
func gitAgrees(t *testing.T, ws string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not installed; skipping the git command-line checks (.ci/run installs it)")
		return ""
	}
	// On PostgreSQL, the database's repository exported into a workspace
	// of its own, which holds none of ws's other files.
	ws, exported, err := memoryRepoDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	log := run("log", "--format=%s")
	run("fsck", "--full")
	if st := run("status", "--porcelain"); st != "" {
		t.Errorf("git status --porcelain = %q, want clean", st)
	}
	// The workspace's other files are outside the repository's concern.
	if ign := run("status", "--porcelain", "--ignored"); !exported && (!strings.Contains(ign, "!! notes.txt") || !strings.Contains(ign, "!! memory/history.jsonl")) {
		t.Errorf("git status --ignored = %q, want notes.txt and history.jsonl ignored", ign)
	}
	return log
}

func TestDreamRunLogRestoreThroughTheBinary(t *testing.T) {
	h := newHarness(t)

	// A conversation, archived by /new.
	h.llm.Push(
		llmtest.Text("Noted: tea, not coffee."),            // the chat turn
		llmtest.Text("- The user prefers tea over coffee"), // the archive call of /new
	)
	if r := h.run("chat", "-m", "I prefer tea over coffee."); r.code != 0 {
		t.Fatalf("chat: %d %s", r.code, r.stderr)
	}
	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: %d %s", r.code, r.stderr)
	}
	hist := readHistory(t, h.ws)
	if len(hist) != 1 {
		t.Fatalf("history = %+v", hist)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("mine, untracked"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readMemoryFile(t, h.ws, "USER.md")
	gitAgrees(t, h.ws)

	// Dream: phase 1 finds the fact, phase 2 edits USER.md, then stops.
	h.llm.Push(
		llmtest.Text("[USER] prefers tea over coffee"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## Preferences\n","new_text":"## Preferences\n- Prefers tea over coffee.\n"}`),
		llmtest.Text("Added the preference to USER.md."),
	)
	r := h.run("dream", "run")
	if r.code != 0 {
		t.Fatalf("dream run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	cursor := checkFirstDream(t, h, r)

	// dream log prints that diff.
	r = h.run("dream", "log")
	if r.code != 0 || !strings.Contains(r.stdout, "+- Prefers tea over coffee.") {
		t.Fatalf("dream log: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("dream log:\n%s", r.stdout)
	sha := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(r.stdout)
	if sha == nil {
		t.Fatalf("no short sha in dream log output:\n%s", r.stdout)
	}

	// Nothing new: no model call.
	n := len(h.llm.Requests())
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "nothing new") {
		t.Errorf("second dream run: %d %q", r.code, r.stdout)
	}
	if len(h.llm.Requests()) != n {
		t.Error("a Dream with nothing new called the model")
	}

	// dream restore <sha> puts USER.md back as a revert commit.
	r = h.run("dream", "restore", sha[1])
	if r.code != 0 {
		t.Fatalf("dream restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("dream restore:\n%s", r.stdout)
	checkRestored(t, h, sha[1], before, cursor)
	// An unknown sha is one sentence, exit 1.
	r = h.run("dream", "log", "ffff")
	if r.code != 1 {
		t.Errorf("dream log ffff: exit %d", r.code)
	}
	oneSentence(t, r.stderr)
}

// checkFirstDream checks the first Dream run r of
// TestDreamRunLogRestoreThroughTheBinary — USER.md edited, the report, the
// cursor, one dream: commit, the tool calls paired — and returns the
// Dream cursor.
func checkFirstDream(t *testing.T, h *harness, r runResult) []byte {
	t.Helper()
	t.Logf("dream run:\n%s", r.stdout)
	after := readMemoryFile(t, h.ws, "USER.md")
	if !strings.Contains(string(after), "- Prefers tea over coffee.") {
		t.Fatalf("USER.md not edited:\n%s", after)
	}
	if !strings.Contains(r.stdout, "USER.md") || !strings.Contains(r.stdout, "1 history entr") {
		t.Errorf("dream run said %q", r.stdout)
	}
	cursor := readDreamCursor(t, h.ws)
	if strings.TrimSpace(string(cursor)) != "1" {
		t.Errorf(".dream_cursor = %q, want the batch's last cursor 1", cursor)
	}
	log := gitAgrees(t, h.ws)
	if log != "" && strings.Count(log, "dream:") != 1 {
		t.Errorf("want exactly one dream: commit, git log:\n%s", log)
	}
	for _, req := range h.llm.Requests() {
		if err := req.CheckToolPairs(); err != nil {
			t.Error(err)
		}
	}
	return cursor
}

// checkRestored checks TestDreamRunLogRestoreThroughTheBinary's restore
// of sha: USER.md as before, the revert the newest commit, dream log and
// /dream-log calling the Dream undone, the untracked file and the cursor
// untouched.
func checkRestored(t *testing.T, h *harness, sha string, before, cursor []byte) {
	t.Helper()
	restored := readMemoryFile(t, h.ws, "USER.md")
	if string(restored) != string(before) {
		t.Errorf("USER.md after restore:\n%s\nwant:\n%s", restored, before)
	}
	log := gitAgrees(t, h.ws)
	if log != "" && !strings.HasPrefix(log, "revert: undo "+sha) {
		t.Errorf("newest commit should be the revert, git log:\n%s", log)
	}
	// The latest Dream commit is undone now: dream log and /dream-log say
	// so rather than offer to undo it again.
	for _, args := range [][]string{{"dream", "log"}, {"chat", "-m", "/dream-log"}} {
		r := h.run(args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Already undone by `") || strings.Contains(r.stdout, "Undo it with") {
			t.Errorf("%v after the restore: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if notes, _ := os.ReadFile(filepath.Join(h.ws, "notes.txt")); string(notes) != "mine, untracked" {
		t.Error("an untracked file was touched")
	}
	if cursor2 := readDreamCursor(t, h.ws); string(cursor2) != string(cursor) {
		t.Error("restore must not roll the Dream cursor back")
	}
}

func TestDreamFromChatAndStatus(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(
		llmtest.Text("Noted."),
		llmtest.Text("- The user's name is Ada"),
	)
	h.run("chat", "-m", "I'm Ada.")
	h.run("chat", "-m", "/new")
	h.llm.Push(
		llmtest.Text("[USER] name is Ada"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## People\n","new_text":"## People\n- Ada\n"}`),
		llmtest.Text("Done."),
	)
	r := h.run("chat", "-m", "/dream")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Dream: 1 change to USER.md") {
		t.Errorf("/dream replied %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "Dreaming") {
		t.Errorf("no progress line on stderr: %q", r.stderr)
	}
	r = h.run("chat", "-m", "/status")
	if !strings.Contains(r.stdout, "Dream:") || !strings.Contains(r.stdout, "last:") {
		t.Errorf("/status = %q", r.stdout)
	}
	t.Logf("/status:\n%s", r.stdout)
	r = h.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "Last Dream commit: ") || !strings.Contains(r.stdout, "reachable") {
		t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("status:\n%s", r.stdout)
}

// `dream log` before any Dream commit says the same as chat's /dream-log:
// whether no Dream has run yet (and how to start one here), or Dreams ran
// and changed nothing.
func TestDreamLogBeforeTheFirstDreamCommit(t *testing.T) {
	h := newHarness(t)
	r := h.run("dream", "log")
	if r.code != 1 || !strings.Contains(r.stderr, "No Dream has run yet. Start one with `dreamgate dream run`.") {
		t.Errorf("dream log before any Dream: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "nothing new") {
		t.Fatalf("dream run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("dream", "log")
	if r.code != 1 || !strings.Contains(r.stderr, "Dreams have run (the last ") ||
		!strings.Contains(r.stderr, "nothing new to read) but none has changed the memory files.") {
		t.Errorf("dream log after a Dream that changed nothing: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}
