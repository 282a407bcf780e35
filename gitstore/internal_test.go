package gitstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// applyUnified applies the hunks of one file's unified diff (as written by
// writeHunks) to from, checking every context and removed line against it.
func applyUnified(t *testing.T, from, diff string) string {
	t.Helper()
	header := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)
	old := strings.SplitAfter(from, "\n")
	if old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	var out []string
	next := 0 // index in old of the first line not yet copied
	body := strings.SplitAfter(diff, "\n")
	for i := 0; i < len(body); {
		line := body[i]
		if line == "" {
			break
		}
		m := header.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("expected a hunk header, got %q in\n%s", line, diff)
		}
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		oldStart, oldCount := num(m[1], 0), num(m[2], 1)
		newStart, newCount := num(m[3], 0), num(m[4], 1)
		at := oldStart - 1
		if oldCount == 0 {
			at = oldStart
		}
		if at < next {
			t.Fatalf("hunk %q overlaps the previous one", line)
		}
		out = append(out, old[next:at]...)
		if wantNew := len(out) + 1; newCount > 0 && newStart != wantNew || newCount == 0 && newStart != len(out) {
			t.Fatalf("hunk %q: new side starts at %d, the output is at line %d", line, newStart, wantNew)
		}
		next = at
		i++
		seenOld, seenNew := 0, 0
		for i < len(body) && body[i] != "" && !strings.HasPrefix(body[i], "@@") {
			l := body[i]
			i++
			text := l[1:]
			if i < len(body) && body[i] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if next >= len(old) || old[next] != text {
					t.Fatalf("line %d: diff says %q, file has %q\n%s", next+1, text, old[min(next, len(old)-1)], diff)
				}
				next++
				seenOld++
				if l[0] == ' ' {
					out = append(out, text)
					seenNew++
				}
			case '+':
				out = append(out, text)
				seenNew++
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
		if seenOld != oldCount || seenNew != newCount {
			t.Fatalf("hunk %q: counted -%d +%d", line, seenOld, seenNew)
		}
	}
	out = append(out, old[next:]...)
	return strings.Join(out, "")
}

func TestHunksApply(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randomFile := func() string {
		var sb strings.Builder
		n := r.IntN(40)
		for range n {
			sb.WriteString(string(rune('a' + r.IntN(4)))) // few distinct lines: many matches
			sb.WriteString("\n")
		}
		if n > 0 && r.IntN(4) == 0 {
			return strings.TrimSuffix(sb.String(), "\n") // no final newline
		}
		return sb.String()
	}
	mutate := func(s string) string {
		ls := strings.SplitAfter(s, "\n")
		for range r.IntN(6) {
			i := r.IntN(len(ls) + 1)
			switch r.IntN(3) {
			case 0:
				ls = append(ls[:i], append([]string{"new\n"}, ls[i:]...)...)
			case 1:
				if i < len(ls) {
					ls = append(ls[:i], ls[i+1:]...)
				}
			case 2:
				if i < len(ls) {
					ls[i] = "changed\n"
				}
			}
		}
		return strings.Join(ls, "")
	}
	for k := range 500 {
		from := randomFile()
		to := mutate(from)
		if k%5 == 0 {
			to = randomFile()
		}
		ops := diffLines(from, to)
		var sb strings.Builder
		added, deleted := 0, 0
		if hasChange(ops) {
			added, deleted = writeHunks(&sb, ops)
		}
		if got := applyUnified(t, from, sb.String()); got != to {
			t.Fatalf("case %d: applying the diff gives %q, want %q\ndiff:\n%s", k, got, to, sb.String())
		}
		plus, minus := 0, 0
		for _, o := range ops {
			switch o.op {
			case '+':
				plus++
			case '-':
				minus++
			}
		}
		if added != plus || deleted != minus {
			t.Fatalf("case %d: counted +%d -%d, the edit script has +%d -%d", k, added, deleted, plus, minus)
		}
	}
}

func TestHunkLayout(t *testing.T) {
	lines := func(n int, f string) string {
		var sb strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&sb, f+"\n", i)
		}
		return sb.String()
	}
	base := lines(20, "line %d")
	tests := []struct {
		name     string
		from, to string
		headers  []string
	}{
		{"new file", "", "a\nb\n", []string{"@@ -0,0 +1,2 @@"}},
		{"emptied", "a\nb\n", "", []string{"@@ -1,2 +0,0 @@"}},
		{"one line", "a\n", "b\n", []string{"@@ -1 +1 @@"}},
		{"insert at top", base, "top\n" + base, []string{"@@ -1,3 +1,4 @@"}},
		{"append", base, base + "end\n", []string{"@@ -18,3 +18,4 @@"}},
		{
			// 6 unchanged lines between two changes: one hunk (contexts touch).
			"close changes merge", base,
			strings.Replace(strings.Replace(base, "line 5\n", "five\n", 1), "line 12\n", "twelve\n", 1),
			[]string{"@@ -2,14 +2,14 @@"},
		},
		{
			// 7 unchanged lines between: two hunks.
			"distant changes split", base,
			strings.Replace(strings.Replace(base, "line 5\n", "five\n", 1), "line 13\n", "thirteen\n", 1),
			[]string{"@@ -2,7 +2,7 @@", "@@ -10,7 +10,7 @@"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			writeHunks(&sb, diffLines(tt.from, tt.to))
			var got []string
			for _, l := range strings.Split(sb.String(), "\n") {
				if strings.HasPrefix(l, "@@") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.headers, "|") {
				t.Errorf("hunk headers %q, want %q\n%s", got, tt.headers, sb.String())
			}
		})
	}
}

func TestFenceAndCut(t *testing.T) {
	fences := map[string]string{
		"plain":            "```",
		"has `inline`":     "```",
		"has ``two``":      "```",
		"+```go\n ```\n":   "````",
		"`````":            "``````",
		"x ```` y ``` z\n": "`````",
	}
	for in, want := range fences {
		if got := fenceFor(in); got != want {
			t.Errorf("fenceFor(%q) = %q, want %q", in, got, want)
		}
	}
	// The diff is cut by characters, at a line break in the second half
	// when there is one, and the mark takes a line of its own.
	cuts := []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 3, "abc\n...[diff truncated]"},
		{"ééééé", 2, "éé\n...[diff truncated]"},
		{"line one\nline two\nline three", 20, "line one\nline two\n...[diff truncated]"},
		{"a\nbcdefghij", 8, "a\nbcdefg\n...[diff truncated]"}, // a newline too early is not worth half the room
		{"abc\ndefgh", 6, "abc\n...[diff truncated]"},         // a newline at the first byte of the second half is
		{"short", 5, "short"},
	}
	for _, c := range cuts {
		got := (&Store{}).Summary(Diff{Files: []FileChange{{Path: "x", Added: 1}}, Unified: c.in}, c.n)
		_, block, _ := strings.Cut(got, "```diff\n")
		if block = strings.TrimSuffix(block, "\n```\n"); block != c.want {
			t.Errorf("Summary of %q cut at %d shows %q, want %q", c.in, c.n, block, c.want)
		}
	}
}

func TestLockedIndex(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	s.lockWait = 20 * time.Millisecond
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil { // a live writer's fresh lock
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("soul\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("dream: soul", ""); !errors.Is(err, ErrLocked) {
		t.Fatalf("Commit under a held index.lock = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("someone else's lock was removed: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("dream: soul", ""); err != nil {
		t.Fatalf("Commit after the lock went away: %v", err)
	}
}

func TestPackPrefix(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit("dream: "+strconv.Itoa(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", dir, "gc", "-q")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git gc: %v\n%s", err, out)
	}
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("pack indexes: %q", idxs)
	}
	for _, c := range all {
		for _, n := range []int{2, 5, 8, 40} {
			hs, err := packPrefix(idxs[0], c.SHA[:n])
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range hs {
				if !strings.HasPrefix(h.String(), c.SHA[:n]) {
					t.Errorf("packPrefix(%q) returned %s", c.SHA[:n], h)
				}
				found = found || h.String() == c.SHA
			}
			if !found {
				t.Errorf("packPrefix(%q) missed %s", c.SHA[:n], c.SHA)
			}
		}
	}
}
