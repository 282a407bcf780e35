package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestCommitOnlyRealChanges(t *testing.T) {
	s, dir := openStore(t)
	noise := workspaceNoise(t, dir)

	if _, err := s.Commit("dream: nothing", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Fatalf("Commit with nothing changed: %v, want ErrNothingToCommit", err)
	}
	// Files outside the tracked set are never a reason to commit.
	testkit.WriteFile(t, dir, "memory/history.jsonl", "{}\n{}\n")
	testkit.WriteFile(t, dir, "notes.txt", "more notes\n")
	if _, err := s.Commit("dream: nothing", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Fatalf("Commit with only untracked changes: %v, want ErrNothingToCommit", err)
	}
	noise["memory/history.jsonl"], noise["notes.txt"] = "{}\n{}\n", "more notes\n"

	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- The team ships on Fridays\n")
	c, err := s.Commit("dream: 1 change(s) from history 1-3", "memory/MEMORY.md: +1 -0\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "dream: 1 change(s) from history 1-3" || c.Body != "memory/MEMORY.md: +1 -0" {
		t.Errorf("commit = %+v", c)
	}
	if want := time.Date(2026, 4, 3, 10, 2, 0, 0, time.UTC).Add(-2 * time.Hour); !c.When.Equal(want) {
		t.Errorf("When = %v, want %v (the injected clock)", c.When, want)
	}
	log, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || !sameCommit(log[0], c) || c.Parent != log[1].SHA {
		t.Fatalf("log = %+v\ncommit = %+v", log, c)
	}
	checkGit(t, s, dir)
	if hasGit() {
		files := lines(runGit(t, dir, "ls-tree", "-r", "--name-only", "HEAD"))
		if want := []string{".gitignore", "SOUL.md", "USER.md", "memory/MEMORY.md"}; !slices.Equal(files, want) {
			t.Errorf("HEAD tree = %q, want %q", files, want)
		}
		if msg := runGit(t, dir, "log", "-1", "--format=%B"); msg != "dream: 1 change(s) from history 1-3\n\nmemory/MEMORY.md: +1 -0\n\n" {
			t.Errorf("message = %q", msg)
		}
	}

	// Same content again: nothing to commit, never an empty commit.
	if _, err := s.Commit("dream: again", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Fatalf("second Commit: %v, want ErrNothingToCommit", err)
	}

	// A deleted tracked file leaves the tree.
	if err := os.Remove(filepath.Join(dir, "USER.md")); err != nil {
		t.Fatal(err)
	}
	del := mustCommit(t, s, "manual: edits outside Dream")
	_, d, err := s.Show(del.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "USER.md" || !strings.Contains(d.Unified, "deleted file mode 100644") {
		t.Errorf("deletion diff = %+v", d)
	}
	checkGit(t, s, dir)
	assertNoise(t, dir, noise)

	for _, subject := range []string{"", "  ", "two\nlines"} {
		testkit.WriteFile(t, dir, "SOUL.md", "changed "+subject)
		if _, err := s.Commit(subject, ""); err == nil {
			t.Errorf("Commit(%q) succeeded; a subject must be one non-empty line", subject)
		}
	}
}

func TestCommitKeepsOtherStagedChangesOut(t *testing.T) {
	s, dir := openStore(t)
	gitBin(t)
	// Someone stages a file with the git command line; our commit must not
	// carry it along (like `git commit -- <tracked files>`).
	testkit.WriteFile(t, dir, "AGENTS.md", "agents\n")
	runGit(t, dir, "add", "-f", "AGENTS.md")
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	if files := lines(runGit(t, dir, "ls-tree", "-r", "--name-only", "HEAD")); slices.Contains(files, "AGENTS.md") {
		t.Errorf("HEAD tree %q contains the file someone else staged", files)
	}
	checkGit(t, s, dir, "A  AGENTS.md")
}

func TestCommitWaitsForIndexLock(t *testing.T) {
	s, dir := openStore(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	testkit.WriteFile(t, dir, ".git/index.lock", "")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	// An hour-old lock is a crash leftover: removed, and the commit goes on.
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index.lock still there after the commit: %v", err)
	}
	checkGit(t, s, dir)
}

func TestConcurrentUse(t *testing.T) {
	s, dir := openStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				// Each goroutine owns one file, so its commits are real.
				name := []string{"SOUL.md", "USER.md", "memory/MEMORY.md", "SOUL.md"}[i]
				p := filepath.Join(dir, filepath.FromSlash(name))
				if i == 3 {
					// Readers only.
					if _, err := s.Log(3, "dream:", nil); err != nil {
						errs <- err
					}
					if _, err := s.Status(nil); err != nil {
						errs <- err
					}
					continue
				}
				if err := os.WriteFile(p, []byte(strings.Repeat("x", j+1)+"\n"), 0o644); err != nil {
					errs <- err
					return
				}
				if _, err := s.Commit("dream: "+name, ""); err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkGit(t, s, dir)
}
