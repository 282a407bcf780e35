package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

const wantIgnore = `/*
!/memory/
/memory/*
!/SOUL.md
!/USER.md
!/memory/MEMORY.md
!/.gitignore
`

// workspaceNoise writes the files a workspace holds besides the tracked
// ones; none of them may ever be committed, changed or removed.
func workspaceNoise(t *testing.T, dir string) map[string]string {
	t.Helper()
	noise := map[string]string{
		"memory/history.jsonl":    `{"cursor": 1, "timestamp": "2026-04-03 00:02", "content": "- x"}` + "\n",
		"memory/.cursor":          "1",
		"memory/.dream_cursor":    "1",
		"AGENTS.md":               "# agents\n",
		"prompts/dream.md":        "be brief\n",
		"sessions/slack_C1.jsonl": "{}\n",
		"notes.txt":               "untracked notes\n",
	}
	for p, c := range noise {
		testkit.WriteFile(t, dir, p, c)
	}
	return noise
}

func assertNoise(t *testing.T, dir string, noise map[string]string) {
	t.Helper()
	for p, c := range noise {
		if got := testkit.ReadFile(t, dir, p); got != c {
			t.Errorf("%s changed: %q, want %q", p, got, c)
		}
	}
}

func TestOpenInitialisesWorkspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	testkit.WriteFile(t, dir, "SOUL.md", "# Soul\nBe kind.\n") // written by onboarding before the store
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, ".gitignore"); got != wantIgnore {
		t.Errorf(".gitignore =\n%s\nwant\n%s", got, wantIgnore)
	}
	for _, p := range []string{"USER.md", "memory/MEMORY.md"} {
		if got := testkit.ReadFile(t, dir, p); got != "" {
			t.Errorf("%s = %q, want an empty file", p, got)
		}
	}
	if got := testkit.ReadFile(t, dir, "SOUL.md"); got != "# Soul\nBe kind.\n" {
		t.Errorf("SOUL.md was overwritten: %q", got)
	}
	log, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Subject != gitstore.InitSubject || log[0].Parent != "" {
		t.Fatalf("log = %+v, want one root commit %q", log, gitstore.InitSubject)
	}
	if len(log[0].SHA) != 40 || log[0].Short != log[0].SHA[:8] {
		t.Errorf("ids: %q / %q", log[0].SHA, log[0].Short)
	}
	_, d, err := s.Show(log[0].SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{".gitignore", "SOUL.md", "USER.md", "memory/MEMORY.md"}; !slices.Equal(paths, want) {
		t.Errorf("initial commit files = %q, want %q", paths, want)
	}

	noise := workspaceNoise(t, dir)
	checkGit(t, s, dir) // everything but the tracked files is ignored: status is clean
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	gitBin(t)
	tracked := lines(runGit(t, dir, "ls-files"))
	if want := []string{".gitignore", "SOUL.md", "USER.md", "memory/MEMORY.md"}; !slices.Equal(tracked, want) {
		t.Errorf("git ls-files = %q, want %q", tracked, want)
	}
	ignored := lines(runGit(t, dir, "status", "--porcelain", "--ignored", "--untracked-files=all"))
	wantIgnored := []string{
		"!! AGENTS.md",
		"!! memory/.cursor",
		"!! memory/.dream_cursor",
		"!! memory/history.jsonl",
		"!! notes.txt",
		"!! prompts/dream.md",
		"!! sessions/slack_C1.jsonl",
	}
	if !slices.Equal(ignored, wantIgnored) {
		t.Errorf("git status --ignored =\n%s\nwant\n%s", strings.Join(ignored, "\n"), strings.Join(wantIgnored, "\n"))
	}
	author := runGit(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ad", "--date=iso")
	if want := "dreamgate <dreamgate@localhost>|dreamgate <dreamgate@localhost>|2026-04-03 10:01:00 +0200\n"; author != want {
		t.Errorf("author line = %q, want %q", author, want)
	}
	assertNoise(t, dir, noise)
}

func TestOpenUsesExistingRepository(t *testing.T) {
	t.Run("our own, reopened", func(t *testing.T) {
		s, dir := openStore(t)
		testkit.WriteFile(t, dir, "memory/MEMORY.md", "- fact\n")
		c := mustCommit(t, s, "dream: 1 change(s) from history 1-1")
		s2, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
		if err != nil {
			t.Fatal(err)
		}
		log, err := s2.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 || log[0].SHA != c.SHA {
			t.Fatalf("reopened log = %+v, want the 2 existing commits", log)
		}
		if got := testkit.ReadFile(t, dir, ".gitignore"); got != wantIgnore {
			t.Errorf(".gitignore changed on reopen:\n%s", got)
		}
		checkGit(t, s2, dir)
	})

	t.Run("nanobot workspace", func(t *testing.T) {
		// A nanobot workspace: its .gitignore re-includes the whole memory/
		// directory (so history.jsonl shows as untracked there).
		dir := t.TempDir()
		runGit(t, dir, "init", "-q", "-b", "master")
		nano, err := os.ReadFile(filepath.Join("testdata", "nanobot.gitignore"))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, dir, ".gitignore", string(nano))
		testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
		testkit.WriteFile(t, dir, "USER.md", "user\n")
		testkit.WriteFile(t, dir, "memory/MEMORY.md", "memory\n")
		runGit(t, dir, "add", ".gitignore", "SOUL.md", "USER.md", "memory/MEMORY.md")
		runGit(t, dir, "commit", "-q", "-m", "init: nanobot memory store")
		noise := workspaceNoise(t, dir)

		s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now})
		if err != nil {
			t.Fatal(err)
		}
		want := string(nano) + strings.Join([]string{
			"!/memory/", "/memory/*", "!/SOUL.md", "!/USER.md", "!/memory/MEMORY.md", "!/.gitignore",
		}, "\n") + "\n"
		if got := testkit.ReadFile(t, dir, ".gitignore"); got != want {
			t.Errorf("merged .gitignore =\n%s\nwant\n%s", got, want)
		}
		log, err := s.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 || log[0].Subject != gitstore.IgnoreSubject || log[1].Subject != "init: nanobot memory store" {
			t.Fatalf("log = %+v", log)
		}
		checkGit(t, s, dir)
		assertNoise(t, dir, noise)

		// Idempotent: a second Open appends nothing and commits nothing.
		if _, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked}); err != nil {
			t.Fatal(err)
		}
		if got := testkit.ReadFile(t, dir, ".gitignore"); got != want {
			t.Errorf(".gitignore after a second Open =\n%s", got)
		}
		if got := lines(runGit(t, dir, "rev-list", "--count", "HEAD")); !slices.Equal(got, []string{"2"}) {
			t.Errorf("commits after a second Open: %q, want 2", got)
		}
	})

	t.Run("initialised but no commit yet", func(t *testing.T) {
		dir := t.TempDir()
		runGit(t, dir, "init", "-q")
		s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
		if err != nil {
			t.Fatal(err)
		}
		log, err := s.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Subject != gitstore.InitSubject {
			t.Fatalf("log = %+v, want the initial commit", log)
		}
		checkGit(t, s, dir)
	})

	t.Run("broken .git", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
		if !errors.Is(err, gitstore.ErrNotARepository) {
			t.Fatalf("Open on an empty .git dir: %v, want ErrNotARepository", err)
		}
	})
}

func TestOpenRefusesNestedWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		outer func(t *testing.T, root string) // makes root (or part of it) a repository
		ws    func(root string) string
	}{
		{
			name:  "ancestor with a .git directory",
			outer: func(t *testing.T, root string) { mkdir(t, filepath.Join(root, ".git")) },
			ws:    func(root string) string { return filepath.Join(root, "home", "ws") },
		},
		{
			name:  "ancestor with a .git file (worktree or submodule)",
			outer: func(t *testing.T, root string) { testkit.WriteFile(t, root, ".git", "gitdir: /elsewhere\n") },
			ws:    func(root string) string { return filepath.Join(root, "a", "b", "ws") },
		},
		{
			name: "workspace is a symlink into a repository",
			outer: func(t *testing.T, root string) {
				mkdir(t, filepath.Join(root, "repo", ".git"))
				mkdir(t, filepath.Join(root, "repo", "sub"))
				mkdir(t, filepath.Join(root, "links"))
				if err := os.Symlink(filepath.Join(root, "repo", "sub"), filepath.Join(root, "links", "ws")); err != nil {
					t.Fatal(err)
				}
			},
			ws: func(root string) string { return filepath.Join(root, "links", "ws") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.outer(t, root)
			ws := tt.ws(root)
			_, err := gitstore.Open(ws, gitstore.Options{Tracked: gitstore.TestTracked})
			if !errors.Is(err, gitstore.ErrNestedRepository) {
				t.Fatalf("Open: %v, want ErrNestedRepository", err)
			}
			var nested *gitstore.NestedRepositoryError
			if !errors.As(err, &nested) {
				t.Fatalf("error %T is not a *NestedRepositoryError", err)
			}
			if !strings.HasPrefix(nested.Outer, root) || !strings.Contains(err.Error(), nested.Outer) {
				t.Errorf("error does not name the outer repository: %v (outer %q)", err, nested.Outer)
			}
			if _, err := os.Lstat(filepath.Join(ws, ".git")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a repository was created in the refused workspace (%v)", err)
			}
		})
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejectsBadTrackedPaths(t *testing.T) {
	for _, p := range []string{"", "/abs.md", "../up.md", "a/../b.md", ".git/config", "sp ace.md", "star*.md", ".gitignore", "./x.md"} {
		t.Run(p, func(t *testing.T) {
			_, err := gitstore.Open(t.TempDir(), gitstore.Options{Tracked: []string{p}})
			if err == nil {
				t.Fatalf("Open with tracked path %q succeeded", p)
			}
		})
	}
	t.Run("file and directory", func(t *testing.T) {
		_, err := gitstore.Open(t.TempDir(), gitstore.Options{Tracked: []string{"a", "a/b.md"}})
		if err == nil {
			t.Fatal("Open with a path that is both a file and a directory succeeded")
		}
	})
}
