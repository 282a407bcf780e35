package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// A restore is a whole step: `dreamgate dream restore` of a deep Dream
// (which wrote USER.md and COLD.md), killed after each of its writes —
// the ref's lock file, the ref, each file it writes from its commit, the
// ledger — is done or not done once the next Dream has run: every fact in
// exactly one tier (hot when the restore happened, as the deep Dream left
// it when not), the files as the branch's commit holds them, the hold
// recorded when the restore happened, git fsck clean, no commit lost.
func TestChaosRestoreKilledAtEachWrite(t *testing.T) {
	cases := []struct {
		point string
		count int
	}{
		{"gitstore-ref-lock", 1}, {"gitstore-ref", 1},
		{"gitstore-checkout", 1}, {"gitstore-checkout", 2},
		{"dream-ledger", 1}, // the restore writes the ledger once
	}
	kills := 0
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s,%d", tc.point, tc.count), func(t *testing.T) {
			h, deep := deepDreamed(t)
			before, _ := checkBranch(h.ws, nil)
			if !killThenDream(t, h, tc.point, tc.count, "dream", "restore", deep) {
				return
			}
			kills++
			restored := strings.HasPrefix(gitCLI(t, h.ws, "log", "-1", "--format=%s"), "revert: undo "+deep)
			t.Logf("killed after %s %d: the restore %s", tc.point, tc.count, map[bool]string{true: "happened", false: "did not happen"}[restored])
			checkHeronTiers(t, h.ws, restored)
			if st := gitCLI(t, h.ws, "status", "--porcelain"); st != "" {
				t.Errorf("the files are not as the branch's commit holds them: %q", st)
			}
			if held := strings.Contains(readLedger(t, h.ws), `"deep_held"`); held != restored {
				t.Errorf("restore made %v, hold recorded %v", restored, held)
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

// killThenDream runs the binary with args, killed after the count-th write
// at point, then the next Dream, which must run whole; it reports whether
// the kill happened (an error when not: the test did not aim).
func killThenDream(t *testing.T, h *harness, point string, count int, args ...string) bool {
	t.Helper()
	killed, code, out := h.runChaos([]string{testKillEnv + "=" + point + "," + strconv.Itoa(count)}, args...)
	if !killed {
		t.Errorf("%s did not reach %s %d times (exit %d): %s", strings.Join(args, " "), point, count, code, out)
		return false
	}
	if killed, code, out := h.runChaos(nil, "dream", "run"); killed || code != 0 {
		t.Fatalf("the Dream after the kill: exit %d\n%s", code, out)
	}
	return true
}

// checkHeronTiers checks that each of deepFacts' facts is in exactly one
// tier of ws's memory, hot when restored; it returns how many are cold.
func checkHeronTiers(t *testing.T, ws string, restored bool) (cold int) {
	t.Helper()
	hot, coldFacts := tierFacts(t, ws)
	for k := 0; k < deepFacts; k++ {
		fact := fmt.Sprintf("Heron%03d", k)
		switch {
		case hot[fact]+coldFacts[fact] != 1:
			t.Errorf("%s is in hot memory %d times and in cold memory %d times", fact, hot[fact], coldFacts[fact])
		case restored && hot[fact] != 1:
			t.Errorf("%s is not hot after the restore", fact)
		}
		cold += coldFacts[fact]
	}
	return cold
}

// deepFacts is how many facts deepDreamed plants.
const deepFacts = 150

// deepDreamed is a workspace whose USER.md, over its budget, a deep Dream
// has compacted (lines to COLD.md), and that commit's short id.
func deepDreamed(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	h.set("memory.hotTokens", 1000)
	h.llm.SetResponder(llmtest.MemoryModel)
	if err := os.MkdirAll(h.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "USER.md"), []byte(deepUserFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("chat", "-m", "Hello there."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "Deep Dream:") {
		t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(h.run("dream", "log").stdout)
	if m == nil {
		t.Fatal("no deep Dream commit")
	}
	return h, m[1]
}

// deepUserFile is a USER.md of deepFacts durable facts, over a 1,000-token
// hot budget.
func deepUserFile() string {
	var b strings.Builder
	b.WriteString("# User\n\n- Ana wants answers in Portuguese. <!-- permanent 2025-01-01 -->\n")
	for i := range deepFacts {
		fmt.Fprintf(&b, "- Ana's project P%03d is called Heron%03d. <!-- durable 2026-%02d-01 src:%d -->\n", i, i, 1+i%11, i+1)
	}
	return b.String()
}

// tierFacts counts each HeronNNN name in the hot files and in cold memory.
func tierFacts(t *testing.T, ws string) (hot, cold map[string]int) {
	t.Helper()
	count := func(rel string) map[string]int {
		data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, it := range memline.ParseFile(data).Items {
			if m := heronRe.FindString(it.Raw); it.Fact && m != "" {
				out[m]++
			}
		}
		return out
	}
	return count("USER.md"), count(workspace.Cold)
}

var heronRe = regexp.MustCompile(`Heron\d{3}`)

func readLedger(t *testing.T, ws string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(workspace.DreamLedger)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func second[A, B any](_ A, b B) B { return b }
