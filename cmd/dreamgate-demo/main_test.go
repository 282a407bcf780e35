package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeWalkThrough is what README's demo walk-through types: the lines
// of its ```text block that start with "> ", each up to the two spaces
// before its note, "  ·  " between two inputs on one line.
func readmeWalkThrough(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "make demo"):
			in = true
		case in && strings.HasPrefix(line, "> "):
			typed, _, _ := strings.Cut(strings.TrimPrefix(line, "> "), "   ")
			for _, l := range strings.Split(typed, "  ·  ") {
				lines = append(lines, strings.TrimSpace(l))
			}
		case in && len(lines) > 0 && strings.HasPrefix(line, "```"):
			return lines
		}
	}
	t.Fatal("README has no demo walk-through (make demo, then lines typed after \"> \")")
	return nil
}

// README's walk-through, typed into make demo's gateway, shows memory at
// work: the fact is Dreamed into USER.md as a commit, /dream-log shows its
// diff, /why the line and where it came from; no model, no key.
func TestReadmeWalkThrough(t *testing.T) {
	lines := readmeWalkThrough(t)
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "/dream") {
		t.Fatalf("the walk-through is %q: a fact, /dream, /dream-log and /why", lines)
	}
	bin := filepath.Join(t.TempDir(), "dreamgate")
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "../dreamgate")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building dreamgate: %v\n%s", err, out)
	}
	var out, errOut bytes.Buffer
	input := strings.Join(lines, "\n") + "\n"
	code, err := run(t.Context(), bin, t.TempDir(), strings.NewReader(input), &out, &errOut)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errOut.String())
	}
	fact := strings.TrimSuffix(lines[0], ".")
	for _, want := range []string{
		"Got it.",
		"Dream: 1 change to USER.md (commit ",
		"+- " + fact,
		fmt.Sprintf("1 remembered line holds %q", strings.ToLower(strings.TrimPrefix(lines[3], "/why "))),
		"from terminal:default",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo did not show %q; stdout:\n%s\nstderr:\n%s", want, out.String(), errOut.String())
		}
	}
	if regexp.MustCompile(`(?i)model is unavailable|cannot connect`).MatchString(out.String() + errOut.String()) {
		t.Errorf("the demo needed a model:\n%s", errOut.String())
	}
}
