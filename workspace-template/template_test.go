package workspacetemplate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestInstallCreatesAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "USER.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	created, err := Install(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SOUL.md", "AGENTS.md", "memory/MEMORY.md", "memory/history.jsonl", "prompts/README.md"} {
		if !slices.Contains(created, want) {
			t.Errorf("Install did not create %s (created %v)", want, created)
		}
	}
	if slices.Contains(created, "USER.md") {
		t.Error("Install claims to have created USER.md, which existed")
	}
	got, _ := os.ReadFile(filepath.Join(dir, "USER.md"))
	if string(got) != "mine" {
		t.Errorf("USER.md overwritten: %q", got)
	}
	again, err := Install(dir)
	if err != nil || len(again) != 0 {
		t.Errorf("second Install created %v, err %v; want nothing", again, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "memory", "history.jsonl")); err != nil || fi.Size() != 0 {
		t.Errorf("history.jsonl should exist and be empty: %v", err)
	}
}
