package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// runKilledAt runs dreamgate with the test fault switch set to point and
// reports whether the process died of its SIGKILL.
func (h *harness) runKilledAt(point string, args ...string) (killed bool, stderr string) {
	h.t.Helper()
	killed, _, stderr = h.runChaos([]string{testKillEnv + "=" + point}, args...)
	return killed, stderr
}

// A Dream killed right after its first edit changed nothing: the edit was
// in its working copy. The next run reads the batch again and commits each
// fact once, saving no hand edit. A Dream killed right after its step's
// branch moved is finished by the next run from the commit ("finished what
// an interrupted Dream had begun"): the files written, the cursor moved,
// nothing read again; the commit can be restored like any Dream commit.
func TestKilledDreamIsRecoveredThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "nothing new") {
		t.Fatalf("first run: %d %q %s", r.code, r.stdout, r.stderr)
	}
	lines := `{"cursor": 1, "timestamp": "2026-04-03 10:00", "content": "- I am a tea drinker", "session_key": "cli:direct"}
{"cursor": 2, "timestamp": "2026-04-03 10:05", "content": "- The project is called dreamgate", "session_key": "cli:direct"}
`
	if err := os.WriteFile(filepath.Join(h.ws, "memory", "history.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	h.llm.SetResponder(llmtest.MemoryModel)
	facts := func() (user, memory string, n int) {
		u, _ := os.ReadFile(filepath.Join(h.ws, "USER.md"))
		m, _ := os.ReadFile(filepath.Join(h.ws, "memory", "MEMORY.md"))
		all := string(u) + string(m)
		return string(u), string(m), strings.Count(all, "tea drinker") + strings.Count(all, "called dreamgate")
	}

	killed, stderr := h.runKilledAt(dream.PointEdit, "dream", "run")
	if !killed {
		t.Fatalf("the Dream was not killed at its edit: %s", stderr)
	}
	if _, _, n := facts(); n != 0 {
		t.Fatal("the Dream killed at its edit changed the memory files")
	}
	r := h.run("dream", "run")
	if r.code != 0 || strings.Contains(r.stdout, "interrupted") || strings.Contains(r.stdout, "Hand edits") {
		t.Fatalf("run after the kill at the edit: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if u, m, n := facts(); n != 2 {
		t.Errorf("facts after the next run: USER.md %q, MEMORY.md %q", u, m)
	}

	more := `{"cursor": 3, "timestamp": "2026-04-03 11:00", "content": "- My dog is called Pixel", "session_key": "cli:direct"}` + "\n"
	f, err := os.OpenFile(filepath.Join(h.ws, "memory", "history.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(more)
	f.Close()
	if killed, stderr := h.runKilledAt(gitstore.PointRef, "dream", "run"); !killed {
		t.Fatalf("the Dream was not killed at its branch's move: %s", stderr)
	}
	r = h.run("dream", "run")
	if r.code != 0 || !strings.Contains(r.stdout, "finished what an interrupted Dream had begun") || !strings.Contains(r.stdout, "nothing new") {
		t.Fatalf("run after the kill at the branch's move: %d %q %s", r.code, r.stdout, r.stderr)
	}
	repo, err := h.app().openRepo()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := repo.Log(10, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Subject == gitstore.ManualSubject || strings.HasSuffix(c.Subject, dream.RecoveredSuffix) {
			t.Errorf("commits: %+v", cs)
		}
	}
	if u, m, _ := facts(); strings.Count(u+m, "Pixel") != 1 {
		t.Errorf("the finished step's fact: USER.md %q, MEMORY.md %q", u, m)
	}
	if r := h.run("dream", "restore", cs[0].Short); r.code != 0 {
		t.Errorf("restore of the finished step's commit: %d %q %s", r.code, r.stdout, r.stderr)
	}
	checkStateFiles(t, h.ws)
}

// With Dream off nothing reads the history; the gateway still keeps it
// bounded: the oldest unread entries past the retention age go, down to
// the compaction limit, and the log says so.
func TestGatewayBoundsHistoryWithDreamOff(t *testing.T) {
	h := newHarness(t)
	h.set("dream.enabled", false)
	if err := os.MkdirAll(filepath.Join(h.ws, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= 1100; i++ {
		fmt.Fprintf(&b, `{"cursor": %d, "timestamp": "2025-01-01 10:00", "content": "- old fact %d", "session_key": "cli:direct"}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "memory", "history.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway", "--terminal")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader("")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("gateway: %v\n%s", err, errb.String())
	}
	if n := len(readHistory(t, h.ws)); n != 1000 {
		t.Errorf("history holds %d entries after a gateway start with Dream off, want 1000", n)
	}
	if !strings.Contains(errb.String(), "Dream is off") {
		t.Errorf("no log line about the retired entries:\n%s", errb.String())
	}
	checkStateFiles(t, h.ws)
}
