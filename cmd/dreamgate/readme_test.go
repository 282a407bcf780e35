package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README is a newcomer's first page: at most 200 lines, its first
// commands make run and make test. README and docs/ are for users of the
// repository: every link they hold opens a file in it, and none points at
// the notes the project was built from.
func TestReadmeAndDocsStayInTheRepository(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README.md has %d lines, want at most 200", n)
	}
	if first := firstCommands(string(readme), 2); len(first) != 2 || !strings.HasPrefix(first[0], "make run") || !strings.HasPrefix(first[1], "make test") {
		t.Errorf("README.md's first commands are %q, want make run and make test", first)
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)`)
	outside := regexp.MustCompile(`/work/|DESIGN\.md|DESIGN §|nanobot-behaviour\.md`)
	for _, f := range append(docs, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "ARCHITECTURE.md")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, f)
		if m := outside.FindString(string(data)); m != "" {
			t.Errorf("%s points outside the repository: %q", name, m)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			if rel, err := filepath.Rel(repoRoot, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %s, outside the repository", name, target)
			} else if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which is not in the repository", name, target)
			}
		}
	}
}

// firstCommands is the first n lines of text's first fenced block.
func firstCommands(text string, n int) []string {
	var out []string
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if in {
				return out
			}
			in = true
		case in && strings.TrimSpace(line) != "" && len(out) < n:
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
