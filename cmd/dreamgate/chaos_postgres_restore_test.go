package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A restore is a whole step on the PostgreSQL engine too: `dreamgate dream
// restore` of a deep Dream, killed after its transaction is sent and not
// committed, once it committed, and after its ledger write, is done or
// not done once the next Dream has run — on the export: every fact in
// exactly one tier (hot when the restore happened), the hold recorded
// when it happened, git fsck clean, no commit lost.
func TestPostgresChaosRestore(t *testing.T) {
	cases := []struct {
		point string
		count int
	}{{"gitstore-db-write", 1}, {"gitstore-db-commit", 1}, {"dream-ledger", 1}}
	kills := 0
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s,%d", tc.point, tc.count), func(t *testing.T) {
			h, deep := deepDreamedOnPostgres(t)
			refs, _ := checkBranch(exportOf(t, h), nil)
			if !killThenDream(t, h, tc.point, tc.count, "dream", "restore", deep) {
				return
			}
			kills++
			ws := exportOf(t, h)
			restored := strings.Contains(gitCLI(t, ws, "log", "--all", "--format=%s"), "revert: undo "+deep)
			t.Logf("killed after %s %d: the restore %s", tc.point, tc.count, map[bool]string{true: "happened", false: "did not happen"}[restored])
			checkHeronTiers(t, ws, restored)
			if held := strings.Contains(readLedger(t, ws), `"deep_held"`); held != restored {
				t.Errorf("restore made %v, hold recorded %v", restored, held)
			}
			for _, problem := range append(checkFsck(ws), second(checkBranch(ws, refs))...) {
				t.Error(problem)
			}
		})
	}
	if kills < len(cases) {
		t.Errorf("only %d kills reached their point: the test did not aim", kills)
	}
}

// deepDreamedOnPostgres is deepDreamed with the memory repository in
// PostgreSQL.
func deepDreamedOnPostgres(t *testing.T) (*harness, string) {
	t.Helper()
	h := overBudgetOnPostgres(t)
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "Deep Dream:") {
		t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(h.run("dream", "log").stdout)
	if m == nil {
		t.Fatal("no deep Dream commit")
	}
	return h, m[1]
}

// overBudgetOnPostgres is a workspace on PostgreSQL whose USER.md is over
// its hot budget, waiting for a deep Dream: the file is a hand edit
// (`memory edit`), as memory kept in the database is written.
func overBudgetOnPostgres(t *testing.T) *harness {
	t.Helper()
	h, _ := newPostgresHarness(t)
	h.set("memory.hotTokens", 1000)
	h.llm.SetResponder(llmtest.MemoryModel)
	from := filepath.Join(t.TempDir(), "USER.md")
	if err := os.WriteFile(from, []byte(deepUserFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("memory", "edit", "--from", from, "USER.md"); r.code != 0 {
		t.Fatalf("memory edit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("chat", "-m", "Hello there."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	return h
}

// exportOf exports the engine's state and memory repository with the
// binary and returns the exported workspace.
func exportOf(t *testing.T, h *harness) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if r := h.run("export", dir); r.code != 0 {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return filepath.Join(dir, "workspace")
}

// A deep Dream is a whole step on the PostgreSQL engine: `dreamgate dream
// run`, moving an over-budget USER.md's lines to cold memory, killed after
// its copy of the files is written, its transaction sent, committed, and
// each ledger write, is done or not done once the next Dream has run — on
// the export: every fact in exactly one tier, git fsck clean, no commit
// lost.
func TestPostgresChaosDeepPass(t *testing.T) {
	cases := []struct {
		point string
		count int
	}{{"dream-deep-write", 1}, {"gitstore-db-write", 1}, {"gitstore-db-commit", 1}, {"dream-ledger", 1}, {"dream-ledger", 2}}
	kills := 0
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s,%d", tc.point, tc.count), func(t *testing.T) {
			h := overBudgetOnPostgres(t)
			refs, _ := checkBranch(exportOf(t, h), nil)
			if !killThenDream(t, h, tc.point, tc.count, "dream", "run") {
				return
			}
			kills++
			ws := exportOf(t, h)
			if checkHeronTiers(t, ws, false) == 0 {
				t.Error("the Dream after the kill left USER.md over its budget: no line went cold")
			}
			for _, problem := range append(checkFsck(ws), second(checkBranch(ws, refs))...) {
				t.Error(problem)
			}
		})
	}
	if kills < len(cases) {
		t.Errorf("only %d of %d aimed kills reached their point: the test did not aim", kills, len(cases))
	}
}
