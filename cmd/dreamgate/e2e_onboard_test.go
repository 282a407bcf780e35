package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func TestOnboardCreatesAndNeverOverwrites(t *testing.T) {
	h := newHarness(t)
	cfgPath := filepath.Join(h.home, "fresh", "config.json")
	h.cfgPath = cfgPath // onboard writes it
	r := h.run("onboard")
	if r.code != 0 || !strings.Contains(r.stdout, "Wrote "+cfgPath) {
		t.Fatalf("onboard: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The written config has every default and loads as is.
	data, err := os.ReadFile(cfgPath)
	if err != nil || !strings.Contains(string(data), `"contextWindow": 128000`) {
		t.Fatalf("config: %v\n%s", err, data)
	}
	ws := filepath.Join(h.home, ".dreamgate", "workspace")
	if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
		t.Errorf("onboard should create the memory repository: %v", err)
	}
	// A hand-edited USER.md and a deleted template file: a second onboard
	// keeps the first and restores the second.
	os.WriteFile(filepath.Join(ws, "USER.md"), []byte("# Users\n- Ada\n"), 0o644)
	os.Remove(filepath.Join(ws, "prompts", "README.md"))
	r = h.run("onboard")
	if r.code != 0 || !strings.Contains(r.stdout, "Kept "+cfgPath) || !strings.Contains(r.stdout, "prompts/README.md") {
		t.Fatalf("second onboard: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "USER.md")); string(got) != "# Users\n- Ada\n" {
		t.Errorf("onboard overwrote USER.md: %q", got)
	}
}

func TestWorkspaceInsideAnotherRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (.ci/run installs it)")
	}
	h := newHarness(t)
	outer := filepath.Join(h.home, "project")
	if err := os.MkdirAll(outer, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	h.set("workspace", filepath.Join(outer, "assistant"))
	h.llm.Push(llmtest.Text("hello"))
	if r := h.run("chat", "-m", "hi"); r.code != 0 || strings.TrimSpace(r.stdout) != "hello" {
		t.Fatalf("chat in a nested workspace: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := h.run("chat", "-m", "/dream")
	if !strings.Contains(r.stdout, "inside another git repository") {
		t.Errorf("/dream in a nested workspace said %q (stderr %q)", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(outer, "assistant", ".git")); err == nil {
		t.Error("a repository was created inside another one")
	}
}
