package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every command pays for package initialisation before main runs, so our
// packages must not build anything there (regexps, tables): they build it
// on first use. GODEBUG=inittrace=1 has the runtime report each package's
// init; what it allocates is exact, unlike its time.
func TestInitAllocatesLittle(t *testing.T) {
	const maxBytes = 4 << 10
	cmd := exec.Command(binPath, "--help")
	cmd.Env = []string{"GODEBUG=inittrace=1", "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dreamgate --help: %v\n%s", err, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init github.com/dreamgate/dreamgate/llm @3.5 ms, 0.28 ms clock, 59792 bytes, 860 allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		seen++
		if !strings.HasPrefix(f[1], "github.com/dreamgate/dreamgate/") {
			continue
		}
		if n, _ := strconv.Atoi(f[7]); n > maxBytes {
			t.Errorf("package %s allocates %d bytes (%s allocs) at start-up; build it on first use (at most %d bytes)", f[1], n, f[9], maxBytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace lines in:\n%s", stderr.String())
	}
}

// A one-shot turn must not open the memory repository (go-git reads the
// repository's config, refs and index): it does not need it. A workspace
// whose repository is broken shows whether it was opened: with warnings on,
// opening it logs one ("Dream is unavailable").
func TestOneShotLeavesMemoryRepositoryAlone(t *testing.T) {
	h := newHarness(t)
	if r := h.run("chat", "-m", "hi"); r.code != 0 { // creates the workspace
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	dotGit := filepath.Join(h.ws, ".git")
	if err := os.RemoveAll(dotGit); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dotGit, []byte("not a repository\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := func(msg string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(binPath, "--config", h.cfgPath, "chat", "-m", msg)
		cmd.Env = []string{"HOME=" + h.home, "DREAMGATE_LOG_LEVEL=warn"}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String()
	}
	// The check can see an opened repository: a command that needs it.
	if _, stderr := chat("/dream-log"); stderr == "" {
		t.Fatal("/dream-log with a broken repository logged no warning; the check below would prove nothing")
	}
	stdout, stderr := chat("hi")
	if strings.TrimSpace(stdout) != "ok" {
		t.Errorf("reply = %q, want ok", stdout)
	}
	if stderr != "" {
		t.Errorf("a one-shot turn touched the memory repository:\n%s", stderr)
	}
}
