package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// The scopes of the move's chaos test: a conversation archived into the
// team's memory that belongs in a private channel's.
const (
	moveFrom  audience.Scope = "team-slack-t1"
	moveTo    audience.Scope = "private-slack-t1-clate"
	moveConv                 = "slack:CLATE"
	moveFacts                = 6
)

// A move is a whole step across two scopes: `dreamgate memory move`,
// killed after each of its writes — the journal that moves both scopes'
// refs at once (the move's commit point), each of the two files it writes
// from its commit, the ledger, the archive's entries rescoped, and before
// them the new private scope's first files, a step of their own (its ref's
// lock file, its ref, its first file, its ledger write) — then asked
// again, as its error tells the operator to, leaves every moved fact once,
// in the private channel's memory alone, the team's own facts with the
// team, the conversation's entries in the private channel's scope, the
// files as the commits hold them, no hand edit nobody made, git fsck clean
// and no commit lost.
func TestChaosMoveKilledAtEachWrite(t *testing.T) {
	cases := []struct {
		point string
		count int
	}{
		// The private scope's first files: one ref, three files.
		{"gitstore-ref-lock", 1}, {"gitstore-ref", 1}, {"gitstore-checkout", 1}, {"dream-ledger", 1},
		// The move: both refs through the journal, two files.
		{"gitstore-journal", 1}, {"gitstore-checkout", 4}, {"gitstore-checkout", 5},
		{"dream-ledger", 2}, {"history-rescope", 1},
	}
	kills := 0
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s,%d", tc.point, tc.count), func(t *testing.T) {
			h := misfiled(t)
			before, _ := checkBranch(h.ws, nil)
			move := []string{"memory", "move", "--conversation", moveConv, "--to", string(moveTo)}
			killed, code, out := h.runChaos([]string{testKillEnv + "=" + tc.point + "," + strconv.Itoa(tc.count)}, move...)
			if !killed {
				t.Errorf("the move did not reach %s %d times (exit %d): %s", tc.point, tc.count, code, out)
				return
			}
			kills++
			if killed, code, out := h.runChaos(nil, move...); killed || code != 0 {
				t.Fatalf("the move asked again after the kill: exit %d\n%s", code, out)
			}
			if killed, code, out := h.runChaos(nil, "dream", "run"); killed || code != 0 {
				t.Fatalf("the Dream after the move: exit %d\n%s", code, out)
			}
			checkMoved(t, h.ws)
			// Nobody edited by hand: a step the kill cut is finished from
			// its commit, never saved as a person's edit.
			for _, subject := range strings.Split(gitCLI(t, h.ws, "log", "--all", "--format=%s"), "\n") {
				if strings.HasPrefix(subject, "manual:") {
					t.Errorf("a commit of hand edits nobody made: %q", subject)
				}
			}
			if st := gitCLI(t, h.ws, "status", "--porcelain"); st != "" {
				t.Errorf("the files are not as the commits hold them: %q", st)
			}
			for _, problem := range append(checkFsck(h.ws), second(checkBranch(h.ws, before))...) {
				t.Error(problem)
			}
		})
	}
	if kills < len(cases) {
		t.Errorf("only %d kills reached their point: the test did not aim", kills)
	}
}

// misfiled is a workspace whose team memory a Dream filled from two
// conversations: #late's facts (EgretNNN), which belong to its private
// channel, and #general's (KestrelNNN).
func misfiled(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	var entries [][3]string
	for i := range moveFacts {
		entries = append(entries,
			[3]string{string(moveFrom), fmt.Sprintf("- The merger code name %d is Egret%03d.", i, i), moveConv},
			[3]string{string(moveFrom), fmt.Sprintf("- The team ships release %d as Kestrel%03d.", i, i), "slack:CGENERAL"})
	}
	appendHistory(t, h.ws, entries...)
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := scopeFacts(t, h.ws, moveFrom, egretRe)["Egret000"]; n != 1 {
		t.Fatalf("the team's memory holds Egret000 %d times after the Dream, so this test shows nothing", n)
	}
	return h
}

var egretRe, kestrelRe = regexp.MustCompile(`Egret\d{3}`), regexp.MustCompile(`Kestrel\d{3}`)

// scopeFacts counts the names re finds in the facts of scope's memory
// files, hot and cold.
func scopeFacts(t *testing.T, ws string, scope audience.Scope, re *regexp.Regexp) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, rel := range memory.TierFiles() {
		data, err := os.ReadFile(filepath.Join(ws, scope.Dir(), filepath.FromSlash(rel)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, it := range memline.ParseFile(data).Items {
			if m := re.FindString(it.Raw); it.Fact && m != "" {
				out[m]++
			}
		}
	}
	return out
}

// checkMoved: every fact of #late is once in the private channel's memory
// and nowhere in the team's; the team keeps its own; every entry of #late
// is in the private channel's scope.
func checkMoved(t *testing.T, ws string) {
	t.Helper()
	fromEgret, toEgret := scopeFacts(t, ws, moveFrom, egretRe), scopeFacts(t, ws, moveTo, egretRe)
	fromKestrel, toKestrel := scopeFacts(t, ws, moveFrom, kestrelRe), scopeFacts(t, ws, moveTo, kestrelRe)
	for i := range moveFacts {
		egret, kestrel := fmt.Sprintf("Egret%03d", i), fmt.Sprintf("Kestrel%03d", i)
		if toEgret[egret] != 1 || fromEgret[egret] != 0 {
			t.Errorf("%s is in the private channel's memory %d times and in the team's %d times", egret, toEgret[egret], fromEgret[egret])
		}
		if fromKestrel[kestrel] != 1 || toKestrel[kestrel] != 0 {
			t.Errorf("%s is in the team's memory %d times and in the private channel's %d times", kestrel, fromKestrel[kestrel], toKestrel[kestrel])
		}
	}
	entries, bad := readChaosHistory(ws)
	for _, b := range bad {
		t.Error(b)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.SessionKey, moveConv) && e.Scope != string(moveTo) {
			t.Errorf("entry %d of %s is in scope %q, not %s", e.Cursor, moveConv, e.Scope, moveTo)
		}
	}
}
