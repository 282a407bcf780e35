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

// A Dream killed right after its first edit reached a memory file: the next
// run commits the edit as a Dream commit labelled recovered (never as
// "manual: edits outside Dream"), finishes the batch, and the recovered
// commit can be restored like any Dream commit.
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

	killed, stderr := h.runKilledAt(dream.PointEdit, "dream", "run")
	if !killed {
		t.Fatalf("the Dream was not killed at its edit: %s", stderr)
	}
	if ledger, err := os.ReadFile(filepath.Join(h.ws, "memory", ".dream_ledger")); err != nil || !strings.Contains(string(ledger), `"intent"`) {
		t.Fatalf("no intent in the Dream ledger after the kill: %v\n%s", err, ledger)
	}

	r := h.run("dream", "run")
	if r.code != 0 || !strings.Contains(r.stdout, "recorded the edits of an interrupted Dream") {
		t.Fatalf("run after the kill: %d %q %s", r.code, r.stdout, r.stderr)
	}
	repo, err := h.app().openRepo()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := repo.Log(10, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var recovered gitstore.Commit
	for _, c := range cs {
		if c.Subject == gitstore.ManualSubject {
			t.Errorf("a Dream's edit was committed as a hand edit: %+v", cs)
		}
		if strings.HasSuffix(c.Subject, dream.RecoveredSuffix) {
			recovered = c
		}
	}
	if recovered.SHA == "" {
		t.Fatalf("no recovered Dream commit: %+v", cs)
	}
	user, _ := os.ReadFile(filepath.Join(h.ws, "USER.md"))
	memory, _ := os.ReadFile(filepath.Join(h.ws, "memory", "MEMORY.md"))
	if strings.Count(string(user)+string(memory), "tea drinker") != 1 || strings.Count(string(user)+string(memory), "called dreamgate") != 1 {
		t.Errorf("facts after recovery: USER.md %q, MEMORY.md %q", user, memory)
	}
	if r := h.run("dream", "restore", recovered.Short); r.code != 0 {
		t.Errorf("restore of the recovered commit: %d %q %s", r.code, r.stdout, r.stderr)
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
