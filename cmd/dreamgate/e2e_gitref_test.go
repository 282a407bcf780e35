package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The memory repository's branch: the file a kill used to empty (go-git
// rewrote it in place).
const branchRef = ".git/refs/heads/main"

// git runs the git command line in the workspace, or skips the test: these
// tests read the repository as git does, not through the Store, which would
// repair what they check.
func git(t *testing.T, ws string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, ws string, args ...string) string {
	t.Helper()
	out, err := git(t, ws, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// branchLog is the first-parent history as git reads it, newest first:
// "<sha> <subject>" lines.
func branchLog(t *testing.T, ws string) []string {
	t.Helper()
	return strings.Split(mustGit(t, ws, "log", "--first-parent", "--format=%H %s"), "\n")
}

// feed appends facts to the archive, as the consolidator would.
func feed(t *testing.T, ws string, facts ...string) {
	t.Helper()
	st, err := history.Open(filepath.Join(ws, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if _, err := st.Append("- "+f, "cli:direct"); err != nil {
			t.Fatal(err)
		}
	}
}

// dreamTwice makes two Dream commits through the binary and returns the
// history.
func dreamTwice(t *testing.T, h *harness) []string {
	t.Helper()
	h.llm.SetResponder(llmtest.MemoryModel)
	for i, fact := range []string{"I am a tea drinker", "The project is called dreamgate"} {
		feed(t, h.ws, fact)
		if r := h.run("dream", "run"); r.code != 0 {
			t.Fatalf("dream run %d: %d %q %s", i, r.code, r.stdout, r.stderr)
		}
	}
	log := branchLog(t, h.ws)
	if n := countPrefix(log, dreamSubject); n != 2 {
		t.Fatalf("want two Dream commits, got:\n%s", strings.Join(log, "\n"))
	}
	return log
}

const dreamSubject = " dream: "

func countPrefix(log []string, sub string) int {
	n := 0
	for _, l := range log {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// assertHistoryWhole: /dream-log answers with the newest Dream commit,
// git reads a history holding every commit of before (and maybe more on
// top), and fsck finds nothing wrong.
func assertHistoryWhole(t *testing.T, h *harness, before []string) []string {
	t.Helper()
	now := branchLog(t, h.ws)
	if len(now) < len(before) || !slices.Equal(now[len(now)-len(before):], before) {
		t.Fatalf("history lost commits:\nnow:\n%s\nbefore:\n%s", strings.Join(now, "\n"), strings.Join(before, "\n"))
	}
	if out, err := git(t, h.ws, "fsck", "--full", "--no-progress", "--no-dangling"); err != nil || out != "" {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	newest := ""
	for _, l := range now {
		if strings.Contains(l, dreamSubject) {
			newest = l[:8]
			break
		}
	}
	r := h.run("chat", "-m", "/dream-log")
	if r.code != 0 || !strings.Contains(r.stdout, newest) {
		t.Errorf("/dream-log: exit %d, want commit %s:\n%s\n%s", r.code, newest, r.stdout, r.stderr)
	}
	return now
}

// A Dream killed at either step of its ref write — the new value synced in
// refs/heads/main.lock, or renamed over the branch — leaves the branch
// naming a commit (the old one, or the new one on top of it), /dream-log
// shows the history whole, and the next Dream commits on top of it.
func TestKillAtTheRefWriteKeepsDreamHistory(t *testing.T) {
	for _, point := range []string{gitstore.PointRefLock, gitstore.PointRef} {
		t.Run(point, func(t *testing.T) {
			h := newHarness(t)
			before := dreamTwice(t, h)
			feed(t, h.ws, "The garden shed holds crate 7")
			if killed, stderr := h.runKilledAt(point, "dream", "run"); !killed {
				t.Fatalf("the Dream was not killed at %s: %s", point, stderr)
			}
			raw, err := os.ReadFile(filepath.Join(h.ws, branchRef))
			if err != nil {
				t.Fatal(err)
			}
			head := strings.TrimSpace(string(raw))
			if _, err := git(t, h.ws, "cat-file", "-e", head+"^{commit}"); err != nil {
				t.Fatalf("after the kill the branch holds %q, not a commit", raw)
			}
			oldHead := strings.Fields(before[0])[0]
			switch point {
			case gitstore.PointRefLock:
				if head != oldHead {
					t.Errorf("the branch moved before the rename: %s, want %s", head, oldHead)
				}
			case gitstore.PointRef:
				if parent := mustGit(t, h.ws, "rev-parse", head+"^"); parent != oldHead {
					t.Errorf("the branch's commit %s has parent %s, want %s", head, parent, oldHead)
				}
			}
			before = assertHistoryWhole(t, h, before)

			feed(t, h.ws, "The blue notebook is in the drawer")
			r := h.run("dream", "run")
			if r.code != 0 {
				t.Fatalf("dream run after the kill: %d %q %s", r.code, r.stdout, r.stderr)
			}
			after := assertHistoryWhole(t, h, before)
			if len(after) <= len(before) || !strings.Contains(after[0], dreamSubject) {
				t.Errorf("the next Dream did not commit on top:\n%s", strings.Join(after, "\n"))
			}
			if _, bad := checkMemory(h.ws); len(bad) > 0 {
				t.Errorf("memory after the kill: %v", bad)
			}
		})
	}
}

// The state an older dreamgate left after a kill during a Dream commit
// (go-git truncated the branch, then died before writing it, holding
// index.lock): every Dream, /dream-log and /dream-restore failed with "the
// memory repository is locked", and ten minutes later the repository was
// started afresh. Now the branch is repaired from the commit index, with a
// log line, and the history stays whole.
func TestEmptiedBranchIsRepairedThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	before := dreamTwice(t, h)
	if err := os.WriteFile(filepath.Join(h.ws, branchRef), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, ".git", "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("dream", "restore")
	if r.code != 0 || !strings.Contains(r.stderr, "repaired a damaged branch") {
		t.Fatalf("dream restore (the list): %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range before {
		if strings.Contains(l, dreamSubject) && !strings.Contains(r.stdout, l[:8]) {
			t.Errorf("the list lacks Dream commit %s:\n%s", l[:8], r.stdout)
		}
	}
	before = assertHistoryWhole(t, h, before)
	feed(t, h.ws, "The garden shed holds crate 7")
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run after the repair: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if after := assertHistoryWhole(t, h, before); len(after) != len(before)+1 {
		t.Errorf("the next Dream did not commit on top:\n%s", strings.Join(after, "\n"))
	}
}

// A branch nothing can repair (no commit index, no reflog, memory files
// matching no commit, two lines of history) stops Dream with one sentence
// in the CLI, `status` and /status, and the repository is left as it was:
// no new history is started.
func TestUnrepairableBranchStopsDream(t *testing.T) {
	h := newHarness(t)
	before := dreamTwice(t, h)
	root := strings.Fields(before[len(before)-1])[0]
	tree := mustGit(t, h.ws, "rev-parse", strings.Fields(before[1])[0]+"^{tree}")
	mustGit(t, h.ws, "-c", "user.name=x", "-c", "user.email=x@y", "commit-tree", "-p", root, "-m", "elsewhere", tree)
	for _, p := range []string{"dreamgate-commits", "index"} { // the commit index, git's index
		if err := os.Remove(filepath.Join(h.ws, ".git", p)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.ws, "USER.md"), []byte("edited by hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, branchRef), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	feed(t, h.ws, "The garden shed holds crate 7")
	for _, args := range [][]string{{"dream", "run"}, {"dream", "log"}, {"dream", "restore"}} {
		r := h.run(args...)
		said := ""
		for l := range strings.SplitSeq(r.stderr, "\n") {
			if strings.HasPrefix(l, "Dream is stopped: ") {
				said = l
			}
		}
		if r.code != 1 || !strings.HasPrefix(said, "Dream is stopped: memory repository is damaged and could not be repaired: refs/heads/main is empty") ||
			!strings.Contains(said, "write the id of the right commit into "+filepath.Join(h.ws, branchRef)) {
			t.Errorf("%s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := h.run("status"); !strings.Contains(r.stdout, "Dream: stopped: memory repository is damaged") {
		t.Errorf("status:\n%s", r.stdout)
	}
	if r := h.run("chat", "-m", "/status"); !strings.Contains(r.stdout, dreamtext.Damaged) {
		t.Errorf("/status:\n%s\n%s", r.stdout, r.stderr)
	}
	if raw, _ := os.ReadFile(filepath.Join(h.ws, branchRef)); len(raw) != 0 {
		t.Errorf("the branch was changed to %q", raw)
	}
	if out, _ := git(t, h.ws, "fsck", "--no-progress"); !strings.Contains(out, "dangling commit "+strings.Fields(before[0])[0]) {
		t.Errorf("the Dream history is not where it was:\n%s", out)
	}
	// Repaired by hand as the message says, Dream goes on from there.
	if err := os.WriteFile(filepath.Join(h.ws, branchRef), []byte(strings.Fields(before[0])[0]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run after the repair by hand: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if after := branchLog(t, h.ws); !slices.Equal(after[len(after)-len(before):], before) {
		t.Errorf("history after the repair by hand:\n%s", strings.Join(after, "\n"))
	}
}

// checkBranch is the chaos suite's check of the memory repository after a
// fault: the branch and each scope's line (refs/scopes/<name>) name a
// commit (a kill never leaves one empty or torn), and the commit each named
// at the last check is still in its history (no kill loses or restarts a
// history, nor a line). It returns the refs' commits.
func checkBranch(ws string, prev map[string]string) (map[string]string, []string) {
	if _, err := exec.LookPath("git"); err != nil {
		return prev, nil // reported once by the suite as not checked
	}
	if _, err := os.Stat(filepath.Join(ws, branchRef)); os.IsNotExist(err) && len(prev) == 0 {
		return prev, nil // no repository yet
	}
	out, err := exec.Command("git", "-C", ws, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/scopes/").Output()
	if err != nil {
		return prev, []string{fmt.Sprintf("git for-each-ref: %v", err)}
	}
	now := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if ref, id, ok := strings.Cut(l, " "); ok {
			now[ref] = id
		}
	}
	var bad []string
	if _, ok := now["refs/heads/main"]; !ok {
		raw, _ := os.ReadFile(filepath.Join(ws, branchRef))
		bad = append(bad, fmt.Sprintf("refs/heads/main holds %q, not a commit", raw))
	}
	for ref, id := range now {
		if exec.Command("git", "-C", ws, "cat-file", "-e", id+"^{commit}").Run() != nil {
			bad = append(bad, fmt.Sprintf("%s holds %s, not a commit", ref, id))
		}
	}
	for ref, old := range prev {
		id, ok := now[ref]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s is gone (it named %.8s)", ref, old))
		case id != old && exec.Command("git", "-C", ws, "merge-base", "--is-ancestor", old, id).Run() != nil:
			bad = append(bad, fmt.Sprintf("the history lost commit %.8s: %s is now %.8s", old, ref, id))
		}
	}
	return now, bad
}
