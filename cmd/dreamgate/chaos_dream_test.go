package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
)

// The chaos suite's Dream part: kills at every write of a Dream step, and
// the invariants once the next Dream has finished what a kill cut.

// feedHistory appends facts to the archive, as another process's
// consolidator would, so that Dream has something to read.
func (c *chaosRig) feedHistory(n int) { c.feedHistoryIn(audience.Default, n) }

// feedHistoryIn is feedHistory for the entries of a memory scope.
func (c *chaosRig) feedHistoryIn(scope audience.Scope, n int) {
	st, err := history.Open(filepath.Join(c.h.ws, "memory"), history.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	for range n {
		c.facts++
		if _, err := st.AppendIn(scope, fmt.Sprintf("- chaosfact %03d: The garden shed holds crate %03d.", c.facts, c.facts), "chaos:feed"); err != nil {
			c.t.Fatal(err)
		}
	}
}

// dreamRun runs `dreamgate dream run`, with a kill point armed when point
// is not "". A refusal as "already dreaming" after a kill is a stale lock.
func (c *chaosRig) dreamRun(point string, count int) (killed bool) {
	var env []string
	if point != "" {
		env = append(env, testKillEnv+"="+point+","+strconv.Itoa(count))
	}
	killed, code, out := c.h.runChaos(env, "dream", "run")
	var bad []string
	if strings.Contains(out, "already dreaming") {
		bad = append(bad, "a Dream was refused as already running: "+out)
	}
	if !killed && code != 0 {
		bad = append(bad, fmt.Sprintf("dream run exit %d: %s", code, out))
	}
	c.ft.check("no stale lock blocks the next run", bad)
	return killed
}

// The kill points of a Dream batch's step, in the order it reaches them:
// an edit of its copy of the files, the commit (the ref's lock file, the
// ref, then the index), each file it writes from the commit, the cursor
// file and the ledger.
var dreamPoints = []string{"dream-edit", "gitstore-ref-lock", "gitstore-ref", "dream-commit", "gitstore-checkout", "dream-cursor", "dream-ledger"}

// deepPoint is a kill point of a deep Dream's step, at its count-th write
// in a run that makes a deep Dream alone (the hand edits that fill the
// memory are committed first: the deep Dream's commit is the run's
// second).
type deepPoint struct {
	name   string
	counts []int
}

// The kill points of a deep Dream's step: its copy written, its commit,
// the gap between its files (cold memory written, MEMORY.md not yet, or
// the other way), the ledger.
var deepPoints = []deepPoint{
	{"dream-deep-write", []int{1}},
	{"gitstore-ref-lock", []int{2}},
	{"gitstore-ref", []int{2}},
	{"gitstore-checkout", []int{1, 2}},
	{"dream-ledger", []int{1, 2, 3}},
}

// dreamPhase kills `dreamgate dream run` after each write of a batch's
// step until each was hit perPoint times: a run does not always reach a
// point (a Dream that finds its facts already in the files edits
// nothing).
func (c *chaosRig) dreamPhase(perPoint int) {
	for _, point := range dreamPoints {
		for i := 0; c.ft.faults["kill -9 after "+point] < perPoint && i < 4*perPoint; i++ {
			count := 1 // a run reads one batch: one edit, one commit, one cursor
			switch point {
			case "gitstore-checkout":
				count = 1 + i%2 // the step's first file, or its second
			case "dream-ledger":
				// Its writes in a run: the recovery's, the batch's
				// step, the settling of the cursors, the run's outcome.
				count = 1 + i%4
			}
			c.dreamKill(point, count)
		}
	}
}

func (c *chaosRig) dreamKill(point string, count int) {
	if entries, _ := readChaosHistory(c.h.ws); len(entries) == 0 || entries[len(entries)-1].Cursor-readInt(filepath.Join(c.h.ws, "memory", ".dream_cursor")) < 6 {
		c.feedHistory(9)
	}
	fault := "kill -9 after " + point
	if c.dreamRun(point, count) {
		c.ft.faults[fault]++
		c.afterKill()
	} else {
		c.ft.notReached[fault]++
	}
}

// deepPhase kills a deep Dream after each write of its step until each
// was hit perPoint times. Each run starts with nothing unread and the
// root's memory filled past its target by hand, so the deep Dream is the
// run's only step with files to write.
func (c *chaosRig) deepPhase(perPoint int) {
	for _, p := range deepPoints {
		fault := "kill -9 after " + p.name + " (deep Dream)"
		for i := 0; c.ft.faults[fault] < perPoint && i < 4*perPoint; i++ {
			c.drain()
			c.fillMemory(60)
			if c.dreamRun(p.name, p.counts[i%len(p.counts)]) {
				c.ft.faults[fault]++
				c.afterKill()
			} else {
				c.ft.notReached[fault]++
			}
		}
	}
}

// afterKill checks the files right after a kill, then has the next Dream
// finish what the kill cut (it runs with no kill point) and checks that
// the step happened whole or not at all: every fact Dream read is once in
// its scope's memory, in one tier, and the memory files hold what their
// commit holds.
func (c *chaosRig) afterKill() {
	c.checkFiles()
	c.dreamRun("", 0)
	c.checkFiles()
	_, bad := checkMemory(c.h.ws)
	c.ft.check("every fact once, in one tier", append(bad, checkFillers(c.h.ws, c.fillers)...))
	c.ft.check("memory files as committed", checkCommitted(c.h.ws))
}

// drain runs Dream until it has read the whole history.
func (c *chaosRig) drain() {
	for i := 0; i < 200; i++ {
		if entries, _ := readChaosHistory(c.h.ws); len(entries) == 0 || entries[len(entries)-1].Cursor <= readInt(filepath.Join(c.h.ws, "memory", ".dream_cursor")) {
			return
		}
		c.dreamRun("", 0)
	}
}

// fillMemory appends n lines to the root's memory/MEMORY.md by hand, as a
// person would, dated today, so that the memory passes its target and the
// next Dream makes a deep Dream of it.
func (c *chaosRig) fillMemory(n int) {
	path := filepath.Join(c.h.ws, "memory", "MEMORY.md")
	data, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatal(err)
	}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		b.WriteByte('\n')
	}
	today := time.Now().UTC().Format("2006-01-02")
	for range n {
		c.fillers++
		fmt.Fprintf(&b, "- Filler %04d was written by hand to fill the memory. <!-- durable %s -->\n", c.fillers, today)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// checkFillers: each of the n lines fillMemory wrote by hand into the
// root's memory is there once, in one tier — the deep Dreams move them to
// cold memory, and a kill between a deep Dream's COLD.md and its USER.md or
// MEMORY.md must not leave one in both, or in neither.
func checkFillers(ws string, n int) []string {
	hot, cold := factLines(ws, "SOUL.md", "USER.md", "memory/MEMORY.md"), factLines(ws, "memory/COLD.md")
	var bad []string
	for i := 1; i <= n; i++ {
		fact := fmt.Sprintf("Filler %04d was written by hand to fill the memory.", i)
		if hot[fact]+cold[fact] != 1 {
			bad = append(bad, fmt.Sprintf("%q is in the memory files %d times and in cold memory %d times, want once in all", fact, hot[fact], cold[fact]))
		}
	}
	return bad
}

// checkCommitted: the memory repository's tracked files are as its branch
// holds them (git status shows nothing): no step left half-written.
func checkCommitted(ws string) []string {
	if _, err := exec.LookPath("git"); err != nil {
		return nil // reported once by the suite as not checked
	}
	out, err := exec.Command("git", "-C", ws, "status", "--porcelain").CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("git status: %v: %s", err, out)}
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return []string{"git status after the next Dream: " + s}
	}
	return nil
}
