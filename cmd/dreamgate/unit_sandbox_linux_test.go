//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// mdweEnv makes the test binary a launcher: it turns on the kernel's
// memory-deny-write-execute for itself (inherited across exec, as systemd's
// MemoryDenyWriteExecute=yes is by every child of the service) and runs
// the command in its arguments.
const mdweEnv = "DREAMGATE_TEST_EXEC_MDWE"

// maybeExecUnderMDWE is the launcher's side, called from TestMain.
func maybeExecUnderMDWE() {
	if os.Getenv(mdweEnv) != "1" {
		return
	}
	const prSetMDWE, refuseExecGain = 65, 1 // PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN (Linux 6.3)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetMDWE, refuseExecGain, 0, 0, 0, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl PR_SET_MDWE:", errno)
		os.Exit(77)
	}
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(78)
}

// nodeStartScript does at start what npx and npm do: read the network
// interfaces, open a TCP socket, start a child process.
const nodeStartScript = `require('os').networkInterfaces();
const s = require('net').createServer(); s.listen(0, '127.0.0.1', () => s.close());
require('child_process').execFileSync(process.execPath, ['-e', '0']);
console.log('node ran');`

// unitSettings reads the unit's Key=value lines (a key set twice keeps
// both values, in order).
func unitSettings(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "packaging", "systemd", "dreamgate.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// The MCP servers docs/mcp.md shows start with npx, so they are Node, and
// they inherit the unit's sandbox. Node must run under it: its
// MemoryDenyWriteExecute (applied with the kernel's own switch, which has
// the effect systemd's has), and, where strace and systemd-analyze are
// installed, its system-call filter and address families, against what
// Node calls at start.
func TestSystemdUnitRunsNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Debian package nodejs; .ci/run installs it): the unit was not checked against Node")
	}
	unit := unitSettings(t)
	t.Run("MemoryDenyWriteExecute", func(t *testing.T) {
		cmd := exec.Command(node, "-e", nodeStartScript)
		if last(unit["MemoryDenyWriteExecute"]) == "yes" {
			cmd = exec.Command(os.Args[0], node, "-e", nodeStartScript)
			cmd.Env = append(os.Environ(), mdweEnv+"=1")
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 77 {
			t.Skipf("this kernel has no PR_SET_MDWE: %s", out)
		}
		if err != nil || !strings.Contains(string(out), "node ran") {
			t.Errorf("node under the unit's MemoryDenyWriteExecute=%s: %v\n%.600s", last(unit["MemoryDenyWriteExecute"]), err, out)
		}
	})
	t.Run("SystemCallFilter and RestrictAddressFamilies", func(t *testing.T) {
		strace, err := exec.LookPath("strace")
		if err != nil {
			t.Skip("strace is not installed (.ci/run installs it): Node's system calls were not checked against the unit's filter")
		}
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			t.Skip("systemd-analyze is not installed: the unit's filter cannot be expanded")
		}
		trace := filepath.Join(t.TempDir(), "trace")
		if out, err := exec.Command(strace, "-f", "-qq", "-o", trace, node, "-e", nodeStartScript).CombinedOutput(); err != nil {
			t.Skipf("strace cannot trace here: %v\n%s", err, out)
		}
		data, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		calls, families := tracedCalls(string(data))
		allowed := unitSyscalls(t, unit["SystemCallFilter"])
		var refused []string
		for c := range calls {
			if !allowed[c] {
				refused = append(refused, c)
			}
		}
		slices.Sort(refused)
		if len(refused) > 0 && len(unit["SystemCallErrorNumber"]) == 0 {
			t.Errorf("Node calls %v, which the unit's SystemCallFilter leaves out: without SystemCallErrorNumber= the kernel kills it (SIGSYS)", refused)
		}
		permitted := strings.Fields(last(unit["RestrictAddressFamilies"]))
		for fam := range families {
			if len(permitted) > 0 && !slices.Contains(permitted, fam) {
				t.Errorf("Node opens %s sockets, which RestrictAddressFamilies=%s refuses", fam, strings.Join(permitted, " "))
			}
		}
	})
}

func last(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

var (
	traceCall   = regexp.MustCompile(`(?m)^\d+ +([a-z0-9_]+)\(`)
	traceSocket = regexp.MustCompile(`(?m)^\d+ +socket\((AF_[A-Z0-9]+)`)
)

// tracedCalls reads strace -f output: the system calls made, and the
// address families of the sockets opened.
func tracedCalls(trace string) (calls, families map[string]bool) {
	calls, families = map[string]bool{}, map[string]bool{}
	for _, m := range traceCall.FindAllStringSubmatch(trace, -1) {
		calls[m[1]] = true
	}
	for _, m := range traceSocket.FindAllStringSubmatch(trace, -1) {
		families[m[1]] = true
	}
	return calls, families
}

// unitSyscalls expands the unit's SystemCallFilter= lines as systemd
// does for a unit whose first line is an allow-list: the allow-lists, minus
// each "~" list that follows.
func unitSyscalls(t *testing.T, lines []string) map[string]bool {
	t.Helper()
	allowed := map[string]bool{}
	for _, line := range lines {
		deny := strings.HasPrefix(line, "~")
		for _, name := range strings.Fields(strings.TrimPrefix(line, "~")) {
			for _, c := range expandSyscalls(t, name, map[string]bool{}) {
				if deny {
					delete(allowed, c)
				} else {
					allowed[c] = true
				}
			}
		}
	}
	return allowed
}

// expandSyscalls resolves a system call or @group to system calls.
func expandSyscalls(t *testing.T, name string, seen map[string]bool) []string {
	t.Helper()
	if !strings.HasPrefix(name, "@") {
		return []string{name}
	}
	if seen[name] {
		return nil
	}
	seen[name] = true
	out, err := exec.Command("systemd-analyze", "syscall-filter", name).Output()
	if err != nil {
		t.Fatalf("systemd-analyze syscall-filter %s: %v", name, err)
	}
	var calls []string
	for i, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if i == 0 || line == "" || strings.HasPrefix(line, "#") {
			continue // the group's own name, comments
		}
		calls = append(calls, expandSyscalls(t, line, seen)...)
	}
	return calls
}
