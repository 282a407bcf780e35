package gitstore_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// baseFiles are committed before each Status case.
var baseFiles = map[string]string{
	"SOUL.md":          "s\n",
	"USER.md":          "u1\nu2\n",
	"memory/MEMORY.md": "a\nb\nc\n",
}

func TestStatus(t *testing.T) {
	type change struct {
		path           string
		added, deleted int
		binary         bool
	}
	tests := []struct {
		name   string
		edit   map[string]string // new contents; "<delete>" removes the file
		want   []change
		inDiff []string // substrings the unified diff must hold
		// sameAsGit: no CRLF folding is involved, so the diff must match
		// `git diff HEAD` (hunk bodies) and apply in reverse.
		sameAsGit bool
	}{
		{name: "no change"},
		{name: "CRLF only", edit: map[string]string{"memory/MEMORY.md": "a\r\nb\r\nc\r\n"}},
		{
			name:      "edit and append",
			edit:      map[string]string{"memory/MEMORY.md": "a\nB\nc\nd\n"},
			want:      []change{{path: "memory/MEMORY.md", added: 2, deleted: 1}},
			inDiff:    []string{"--- a/memory/MEMORY.md\n+++ b/memory/MEMORY.md\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"},
			sameAsGit: true,
		},
		{
			name:      "missing final newline is a change",
			edit:      map[string]string{"memory/MEMORY.md": "a\nb\nc"},
			want:      []change{{path: "memory/MEMORY.md", added: 1, deleted: 1}},
			inDiff:    []string{"-c\n+c\n\\ No newline at end of file\n"},
			sameAsGit: true,
		},
		{
			name:   "CRLF plus a real change counts the real change",
			edit:   map[string]string{"memory/MEMORY.md": "a\r\nb\r\nX\r\n"},
			want:   []change{{path: "memory/MEMORY.md", added: 1, deleted: 1}},
			inDiff: []string{" b\n-c\n+X\n"},
		},
		{
			name:      "a lone CR is a change",
			edit:      map[string]string{"memory/MEMORY.md": "a\rb\nc\n"},
			want:      []change{{path: "memory/MEMORY.md", added: 1, deleted: 2}},
			sameAsGit: true,
		},
		{
			name:   "binary",
			edit:   map[string]string{"USER.md": "u1\x00\x01"},
			want:   []change{{path: "USER.md", binary: true}},
			inDiff: []string{"Binary files a/USER.md and b/USER.md differ\n"},
		},
		{
			name: "non-UTF-8",
			edit: map[string]string{"USER.md": "caf\xe9\n"},
			want: []change{{path: "USER.md", binary: true}},
		},
		{
			name:      "deleted file",
			edit:      map[string]string{"USER.md": "<delete>"},
			want:      []change{{path: "USER.md", deleted: 2}},
			inDiff:    []string{"deleted file mode 100644\n", "--- a/USER.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-u1\n-u2\n"},
			sameAsGit: true,
		},
		{
			name: "several files, sorted by path",
			edit: map[string]string{"memory/MEMORY.md": "a\nb\nc\nd\n", "SOUL.md": "t\n"},
			want: []change{
				{path: "SOUL.md", added: 1, deleted: 1},
				{path: "memory/MEMORY.md", added: 1},
			},
			sameAsGit: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := openStore(t)
			for p, c := range baseFiles {
				testkit.WriteFile(t, dir, p, c)
			}
			mustCommit(t, s, "manual: base")
			for p, c := range tt.edit {
				if c == "<delete>" {
					if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
						t.Fatal(err)
					}
					continue
				}
				testkit.WriteFile(t, dir, p, c)
			}
			d, err := s.Status(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []change
			for _, f := range d.Files {
				got = append(got, change{f.Path, f.Added, f.Deleted, f.Binary})
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Status files = %+v, want %+v\n%s", got, tt.want, d.Unified)
			}
			if d.Empty() != (len(tt.want) == 0) || (d.Unified == "") != (len(tt.want) == 0) {
				t.Errorf("Empty() = %v with unified diff %q", d.Empty(), d.Unified)
			}
			for _, sub := range tt.inDiff {
				if !strings.Contains(d.Unified, sub) {
					t.Errorf("diff lacks %q:\n%s", sub, d.Unified)
				}
			}
			if tt.sameAsGit && hasGit() {
				gitDiff := runGit(t, dir, "diff", "--no-color", "HEAD")
				if got, want := stripHunkContext(d.Unified), stripHunkContext(gitDiff); got != want {
					t.Errorf("Status diff differs from git diff HEAD:\n--- ours\n%s\n--- git\n%s", got, want)
				}
				patch := filepath.Join(t.TempDir(), "status.patch")
				if err := os.WriteFile(patch, []byte(d.Unified), 0o644); err != nil {
					t.Fatal(err)
				}
				runGit(t, dir, "apply", "--check", "-R", patch)
			}
		})
	}
}

// stripHunkContext drops what git prints after a hunk header (the nearest
// "function" line); our diffs do not guess function names.
func stripHunkContext(diff string) string {
	return regexp.MustCompile(`(?m)^(@@ [^@]* @@).*$`).ReplaceAllString(diff, "$1")
}

func blobID(content string) string {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(content)).String()[:7]
}

func TestSummary(t *testing.T) {
	s, dir := openStore(t)
	for p, c := range baseFiles {
		testkit.WriteFile(t, dir, p, c)
	}
	mustCommit(t, s, "manual: base")
	testkit.WriteFile(t, dir, "SOUL.md", "s\nt\n")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "a\nB\nc\n")
	testkit.WriteFile(t, dir, "USER.md", "\x00")
	d, err := s.Status(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "SOUL.md: +1 -0\n" +
		"USER.md: binary or non-UTF-8 file changed\n" +
		"memory/MEMORY.md: +1 -1\n" +
		"3 files changed, 2 insertions(+), 1 deletion(-)\n" +
		"\n```diff\n" +
		"diff --git a/SOUL.md b/SOUL.md\n" +
		"index " + blobID("s\n") + ".." + blobID("s\nt\n") + " 100644\n" +
		"--- a/SOUL.md\n+++ b/SOUL.md\n" +
		"@@ -1 +1,2 @@\n s\n+t\n" +
		"diff --git a/USER.md b/USER.md\n" +
		"index " + blobID("u1\nu2\n") + ".." + blobID("\x00") + " 100644\n" +
		"Binary files a/USER.md and b/USER.md differ\n" +
		"diff --git a/memory/MEMORY.md b/memory/MEMORY.md\n" +
		"index " + blobID("a\nb\nc\n") + ".." + blobID("a\nB\nc\n") + " 100644\n" +
		"--- a/memory/MEMORY.md\n+++ b/memory/MEMORY.md\n" +
		"@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" +
		"```\n"
	if got := s.Summary(d, 0); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
	if got := s.Summary(gitstore.Diff{}, 0); got != "" {
		t.Errorf("Summary of an empty diff = %q, want \"\"", got)
	}

	t.Run("wording", func(t *testing.T) {
		tests := []struct {
			files []gitstore.FileChange
			total string
		}{
			{[]gitstore.FileChange{{Path: "a", Added: 1}}, "1 file changed, 1 insertion(+)\n"},
			{[]gitstore.FileChange{{Path: "a", Deleted: 2}}, "1 file changed, 2 deletions(-)\n"},
			{[]gitstore.FileChange{{Path: "a", Binary: true}}, "1 file changed, 0 insertions(+), 0 deletions(-)\n"},
			{[]gitstore.FileChange{{Path: "a", Added: 2, Deleted: 1}, {Path: "b", Added: 1}}, "2 files changed, 3 insertions(+), 1 deletion(-)\n"},
		}
		for _, tt := range tests {
			got := s.Summary(gitstore.Diff{Files: tt.files}, 0)
			if !strings.HasSuffix(got, tt.total) {
				t.Errorf("Summary(%+v) = %q, want it to end with %q", tt.files, got, tt.total)
			}
		}
	})

	t.Run("truncated", func(t *testing.T) {
		var big strings.Builder
		for i := range 2000 {
			big.WriteString("- fact number ")
			big.WriteString(strings.Repeat("é", i%7))
			big.WriteString("\n")
		}
		testkit.WriteFile(t, dir, "memory/MEMORY.md", big.String())
		d, err := s.Status(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{100, 1000, 6000} {
			got := s.Summary(d, limit)
			_, block, ok := strings.Cut(got, "```diff\n")
			if !ok {
				t.Fatalf("no diff block in %q", got)
			}
			block = strings.TrimSuffix(block, "\n```\n")
			if !strings.HasSuffix(block, "\n...[diff truncated]") {
				t.Errorf("max %d: the cut diff does not end with the marker: %q", limit, block[max(0, len(block)-60):])
			}
			body := strings.TrimSuffix(block, "\n...[diff truncated]")
			if n := utf8.RuneCountInString(body); n > limit || n < limit/2 {
				t.Errorf("max %d: kept %d characters", limit, n)
			}
			if !utf8.ValidString(got) {
				t.Errorf("max %d: the cut split a character", limit)
			}
		}
	})

	t.Run("backticks in the memory file", func(t *testing.T) {
		testkit.WriteFile(t, dir, "memory/MEMORY.md", "a\n```go\nfmt.Println()\n```\nc\n")
		testkit.WriteFile(t, dir, "SOUL.md", "s\n")
		testkit.WriteFile(t, dir, "USER.md", "u1\nu2\n")
		d, err := s.Status(nil)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Summary(d, 0)
		if !strings.Contains(got, "\n````diff\n") || !strings.HasSuffix(got, "\n````\n") {
			t.Errorf("a diff holding ``` needs a longer fence:\n%s", got)
		}
	})
}
