package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// This file holds the chaos suite's machinery: running the binary with a
// kill point, and the invariant checkers run after every fault.

// startProc runs `dreamgate gateway` with the harness config and extra
// environment (the kill switch). Unlike startGateway it leaves stopping to
// the caller, who may have killed it.
func (h *harness) startProc(t testing.TB, env ...string) *gatewayProc {
	t.Helper()
	addr := freeAddr(t)
	h.set("gateway.healthAddr", addr)
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway")
	cmd.Env = append([]string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}, env...)
	p := &gatewayProc{cmd: cmd, stderr: &testkit.Buffer{}, health: "http://" + addr + "/healthz", exited: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process with SIGKILL (if it still runs) and waits for it.
func (p *gatewayProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the process with SIGTERM and waits at most bound; it reports
// whether the process ended in time (else it is killed).
func (p *gatewayProc) stop(bound time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(bound):
		p.kill()
		return false
	}
}

// killedBySignal reports whether the ended process died of SIGKILL (its own
// kill switch or ours).
func (p *gatewayProc) killedBySignal() bool {
	<-p.exited
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// rssKB is the process's resident set now, 0 when it has ended.
func (p *gatewayProc) rssKB() int64 {
	select {
	case <-p.exited:
		return 0
	default:
	}
	return procStatusKB(p.cmd.Process.Pid, "VmRSS:")
}

// runChaos runs a one-shot subcommand with extra environment and reports
// whether it was killed, its exit code and stderr.
func (h *harness) runChaos(env []string, args ...string) (killed bool, code int, stderr string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"--config", h.cfgPath}, args...)...)
	cmd.Env = append([]string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}, env...)
	cmd.Stdin = strings.NewReader("")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, -1, errb.String()
		}
	}
	return false, cmd.ProcessState.ExitCode(), errb.String()
}

// checkSessions: every session file parses, line by line (a kill after a
// write never leaves a torn line), and every metadata record is JSON.
func checkSessions(state string) []string {
	dir := filepath.Join(state, "sessions")
	des, err := os.ReadDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("sessions dir: %v", err)}
	}
	var bad []string
	for _, de := range des {
		path := filepath.Join(dir, de.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", de.Name(), err))
			continue
		}
		switch {
		case strings.HasSuffix(de.Name(), ".jsonl"):
			if len(data) > 0 && data[len(data)-1] != '\n' {
				bad = append(bad, de.Name()+": ends in a torn line")
			}
			for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
				var v map[string]any
				if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &v) != nil {
					bad = append(bad, fmt.Sprintf("%s line %d does not parse", de.Name(), i+1))
				}
			}
		case strings.HasSuffix(de.Name(), ".meta.json"):
			var v map[string]any
			if json.Unmarshal(data, &v) != nil {
				bad = append(bad, de.Name()+" does not parse")
			}
		}
	}
	return bad
}

// historyEntry is what the invariants read of a history.jsonl line.
type historyEntry struct {
	Cursor     int    `json:"cursor"`
	Content    string `json:"content"`
	SessionID  string `json:"session_id"`
	SessionKey string `json:"session_key"`
	Range      []int  `json:"range"`
	// Scope is the memory scope whose files Dream reads it into ("": the
	// root's).
	Scope string `json:"scope"`
}

func readChaosHistory(ws string) ([]historyEntry, []string) {
	f, err := os.Open(filepath.Join(ws, "memory", "history.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{err.Error()}
	}
	defer f.Close()
	var out []historyEntry
	var bad []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e historyEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			bad = append(bad, fmt.Sprintf("history line %d does not parse", n))
			continue
		}
		out = append(out, e)
	}
	return out, bad
}

// checkHistory: cursors strictly increase, no message of a session is in
// two entries' ranges, and the Dream cursor is not past the last entry.
func checkHistory(ws string) []string {
	entries, bad := readChaosHistory(ws)
	last := 0
	held := map[string]int{} // session_id/message -> cursor
	for _, e := range entries {
		if e.Cursor <= last {
			bad = append(bad, fmt.Sprintf("cursor %d after %d", e.Cursor, last))
		}
		last = e.Cursor
		if e.SessionID == "" || len(e.Range) != 2 {
			continue
		}
		for m := e.Range[0]; m < e.Range[1]; m++ {
			k := fmt.Sprintf("%s/%d", e.SessionID, m)
			if prev, dup := held[k]; dup {
				bad = append(bad, fmt.Sprintf("message %s archived by entries %d and %d", k, prev, e.Cursor))
			}
			held[k] = e.Cursor
		}
	}
	if dc := readInt(filepath.Join(ws, "memory", ".dream_cursor")); dc > last && len(entries) > 0 {
		bad = append(bad, fmt.Sprintf("dream cursor %d past the last entry %d", dc, last))
	}
	return bad
}

func readInt(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n int
	_, _ = fmt.Sscan(strings.TrimSpace(string(data)), &n)
	return n
}

// checkFsck runs `git fsck --full` on the memory repository.
func checkFsck(ws string) []string {
	if _, err := exec.LookPath("git"); err != nil {
		return nil // reported once by the suite as not checked
	}
	dir, _, err := memoryRepoDir(ws) // the database's repository, exported, on PostgreSQL
	if err != nil {
		return []string{fmt.Sprintf("export the memory repository: %v", err)}
	}
	out, err := exec.Command("git", "-C", dir, "fsck", "--full", "--no-progress").CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("git fsck: %v: %s", err, strings.TrimSpace(string(out)))}
	}
	return nil
}

var factLine = regexp.MustCompile(`(?m)^- (.+)$`)

// checkMemory: every fact Dream has consumed (history entries up to the
// Dream cursor) is in its scope's memory exactly once, in exactly one
// tier — the memory files (hot) or cold memory (memory/COLD.md, where a
// deep Dream moves lines): no edit lost, none applied twice, no line left
// in both tiers by a step cut short. The facts are the "- " lines of the
// entries; the suite's facts all carry a unique token, so a fact is found
// by its line.
func checkMemory(ws string) (consumed int, bad []string) {
	entries, _ := readChaosHistory(ws)
	dc := readInt(filepath.Join(ws, "memory", ".dream_cursor"))
	// Each scope's facts are in its own files: the root's, or
	// scopes/<name>/'s.
	type tiers struct{ hot, cold map[string]int }
	scopeLines := map[string]tiers{}
	linesOf := func(scope string) tiers {
		if l, ok := scopeLines[scope]; ok {
			return l
		}
		dir := ws
		if scope != "" {
			dir = filepath.Join(ws, "scopes", scope)
		}
		l := tiers{hot: factLines(dir, "SOUL.md", "USER.md", "memory/MEMORY.md"), cold: factLines(dir, "memory/COLD.md")}
		scopeLines[scope] = l
		return l
	}
	for _, e := range entries {
		if e.Cursor > dc {
			continue
		}
		lines := linesOf(e.Scope)
		for _, m := range factLine.FindAllStringSubmatch(e.Content, -1) {
			fact := strings.TrimSpace(m[1])
			if !strings.Contains(fact, "chaosfact") {
				continue
			}
			consumed++
			if hot, cold := lines.hot[fact], lines.cold[fact]; hot+cold != 1 {
				bad = append(bad, fmt.Sprintf("fact %q is in the memory files %d times and in cold memory %d times, want once in all", fact, hot, cold))
			}
		}
	}
	return consumed, bad
}

// factLines counts the facts of the files (relative to dir) by their text:
// a memory line's fact is its text before the metadata comment Dream
// keeps (memline).
func factLines(dir string, files ...string) map[string]int {
	var mem strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		mem.Write(data)
		mem.WriteByte('\n')
	}
	l := map[string]int{}
	for _, it := range memline.ParseFile([]byte(mem.String())).Items {
		if it.Fact && it.Line.Indent == "" && it.Line.Bullet == "-" {
			l[strings.TrimSpace(it.Line.Text)]++
		}
	}
	return l
}

// faultTable counts faults injected and invariant checks, and prints them.
type faultTable struct {
	faults     map[string]int
	notReached map[string]int
	checks     map[string]int
	violations []string
}

func newFaultTable() *faultTable {
	return &faultTable{faults: map[string]int{}, notReached: map[string]int{}, checks: map[string]int{}}
}

func (ft *faultTable) check(name string, bad []string) {
	ft.checks[name]++
	for _, b := range bad {
		if v := name + ": " + b; !slices.Contains(ft.violations, v) {
			ft.violations = append(ft.violations, v)
		}
	}
}

func (ft *faultTable) print(w io.Writer) {
	keys := func(m map[string]int) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return k
	}
	fmt.Fprintln(w, "chaos: faults injected")
	fmt.Fprintf(w, "  %-56s %8s %12s\n", "fault", "injected", "not reached")
	for _, k := range keys(ft.faults) {
		fmt.Fprintf(w, "  %-56s %8d %12d\n", k, ft.faults[k], ft.notReached[k])
	}
	fmt.Fprintln(w, "chaos: invariants")
	fmt.Fprintf(w, "  %-56s %8s %12s\n", "invariant", "checked", "violations")
	for _, k := range keys(ft.checks) {
		n := 0
		for _, v := range ft.violations {
			if strings.HasPrefix(v, k+": ") {
				n++
			}
		}
		fmt.Fprintf(w, "  %-56s %8d %12d\n", k, ft.checks[k], n)
	}
}
