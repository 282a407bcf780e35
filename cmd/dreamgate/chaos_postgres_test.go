package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// The chaos points of a Dream step on the PostgreSQL engine, where the
// memory repository is the database's and a step's commit, its refs, its
// part of the commit index and its ledger step are one transaction:
// `dreamgate dream run` is killed after an edit of its copy of the files,
// with its transaction sent and not committed, once it committed, after
// Dream saw the commit, and after each write of the ledger (a step's within
// its transaction) — in the default scope and a team's
// (a line of its own). After each kill the next Dream runs, and
// `dreamgate export` writes the database back as files, on which: every
// fact Dream read is once in its scope's memory, in one tier; no line of
// history lost a commit; `git fsck --full` finds the repository whole.
func TestPostgresChaosDreamStep(t *testing.T) {
	h, dsn := newPostgresHarness(t)
	h.set("dream.maxBatchSize", 3)
	h.llm.SetResponder(llmtest.MemoryModel)
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	team := audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}.Home()
	facts := 0
	feed := func(scope audience.Scope) {
		for range 3 {
			facts++
			fact := fmt.Sprintf("- chaosfact %03d: The garden shed holds crate %03d.", facts, facts)
			if _, err := db.Archive().AppendIn(scope, fact, "chaos:feed"); err != nil {
				t.Fatal(err)
			}
		}
	}
	points := []struct {
		name   string
		counts []int
	}{
		{"dream-edit", []int{1}},
		{"gitstore-db-write", []int{1}},
		{"gitstore-db-commit", []int{1}},
		{"dream-commit", []int{1}},
		{"dream-ledger", []int{1, 2, 3}},
	}
	var refs map[string]string
	kills, cases := 0, 0
	for _, p := range points {
		for _, count := range p.counts {
			for _, scope := range []audience.Scope{audience.Default, team} {
				cases++
				feed(scope)
				env := []string{testKillEnv + "=" + p.name + "," + strconv.Itoa(count)}
				killed, code, out := h.runChaos(env, "dream", "run")
				if !killed {
					t.Logf("%s,%d in the %s scope: not reached (exit %d)", p.name, count, scope, code)
					continue
				}
				kills++
				if killed, code, out = h.runChaos(nil, "dream", "run"); killed || code != 0 || strings.Contains(out, "already dreaming") {
					t.Fatalf("the Dream after a kill at %s,%d: exit %d\n%s", p.name, count, code, out)
				}
				refs = checkExported(t, h, fmt.Sprintf("%s,%d (%s)", p.name, count, scope), refs)
			}
		}
	}
	t.Logf("%d kills of %d aimed", kills, cases)
	if kills < cases {
		t.Errorf("only %d of %d aimed kills reached their point", kills, cases)
	}
}

// newPostgresHarness is a harness on the PostgreSQL engine, in a schema
// of its own (whatever DREAMGATE_TEST_ENGINE says), and its DSN.
func newPostgresHarness(t *testing.T) (*harness, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store", map[string]any{"postgres": dsn})
	pgWorkspaces.Store(h.ws, dsn)
	return h, dsn
}

// checkExported exports the engine's state and memory repository with the
// binary and checks the chaos invariants on the export; it returns the
// refs, for the next check to compare.
func checkExported(t *testing.T, h *harness, after string, prev map[string]string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if r := h.run("export", dir); r.code != 0 {
		t.Fatalf("export after %s: exit %d\n%s%s", after, r.code, r.stdout, r.stderr)
	}
	ws := filepath.Join(dir, "workspace")
	consumed, bad := checkMemory(ws)
	for _, b := range bad {
		t.Errorf("after %s: %s", after, b)
	}
	if consumed == 0 {
		t.Errorf("after %s: no fact read by Dream yet", after)
	}
	for _, p := range checkFsck(ws) {
		t.Errorf("after %s: %s", after, p)
	}
	refs, lost := checkBranch(ws, prev)
	for _, l := range lost {
		t.Errorf("after %s: %s", after, l)
	}
	return refs
}
