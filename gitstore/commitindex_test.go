package gitstore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// The commit index is a cache of the first-parent history. These tests
// change the history behind the Store's back (the git command line) or
// damage the index file, and check that the Store still answers from the
// repository.

// gitLog is the first-parent history as the git command line sees it:
// "<sha> <subject>", newest first.
func gitLog(t *testing.T, dir string) []string {
	t.Helper()
	return lines(runGit(t, dir, "log", "--first-parent", "--format=%H %s"))
}

func storeLog(t *testing.T, s *gitstore.Store) []string {
	t.Helper()
	cs, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.SHA+" "+c.Subject)
	}
	return out
}

func latest(t *testing.T, s *gitstore.Store, prefix string) gitstore.Commit {
	t.Helper()
	c, _, err := s.Latest(prefix, nil)
	if err != nil {
		t.Fatalf("Latest(%q): %v", prefix, err)
	}
	return c
}

func TestCommitIndexSeesGitCommits(t *testing.T) {
	gitBin(t)
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "a\n")
	a := mustCommit(t, s, "dream: A")
	if got := latest(t, s, "dream:"); got.SHA != a.SHA { // the index exists from here on
		t.Fatalf("Latest = %s, want A", got.Subject)
	}

	// A commit made with the git command line between two Store calls.
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "a\nb by git\n")
	runGit(t, dir, "commit", "-q", "-m", "dream: B by git", "--", "memory/MEMORY.md")
	if got := latest(t, s, "dream:"); got.Subject != "dream: B by git" {
		t.Errorf("Latest after a git commit = %q, want the git commit", got.Subject)
	}
	// Two more that change SOUL.md and put it back: a restore before A
	// leaves SOUL.md alone, so it must not name them.
	testkit.WriteFile(t, dir, "SOUL.md", "e\n")
	runGit(t, dir, "commit", "-q", "-m", "manual: E by git", "--", "SOUL.md")
	testkit.WriteFile(t, dir, "SOUL.md", "")
	runGit(t, dir, "commit", "-q", "-m", "manual: F by git", "--", "SOUL.md")
	testkit.WriteFile(t, dir, "USER.md", "c\n")
	c := mustCommit(t, s, "dream: C")
	if got, want := storeLog(t, s), gitLog(t, dir); !slices.Equal(got, want) {
		t.Errorf("Log = %q, want %q", got, want)
	}

	// Undoing A is planned on what the git commit B made of MEMORY.md:
	// A's line goes, B's stays.
	if _, err := s.Restore(a.Short, nil, gitstore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, "memory/MEMORY.md"); got != "b by git\n" {
		t.Errorf("MEMORY.md = %q, want B's line alone", got)
	}

	// The branch moved back with the git command line, then on again.
	runGit(t, dir, "reset", "-q", "--hard", c.SHA)
	if got := latest(t, s, ""); got.SHA != c.SHA {
		t.Errorf("Latest after reset = %q, want C", got.Subject)
	}
	testkit.WriteFile(t, dir, "SOUL.md", "d\n")
	runGit(t, dir, "commit", "-q", "-m", "manual: D by git", "--", "SOUL.md")
	if got, want := storeLog(t, s), gitLog(t, dir); !slices.Equal(got, want) {
		t.Errorf("Log after reset and commit = %q, want %q", got, want)
	}
	if _, err := s.Restore(c.Short, nil, gitstore.RestoreOptions{}); err != nil {
		t.Fatalf("Restore(C) after reset: %v", err)
	}
	// The revert commit replaced "revert: undo <A>" at the top: that one is
	// gone from the history, so it is unknown to a restore.
	all := gitLog(t, dir)
	if strings.Contains(strings.Join(all, "\n"), gitstore.RevertPrefix+a.Short) {
		t.Fatalf("git log still has the reverted restore: %q", all)
	}
	checkGit(t, s, dir)
}

// indexDamage are the ways TestCommitIndexRebuilt damages the commit
// index: each makes a new version of the file's data (nil: the file is
// deleted).
var indexDamage = map[string]func(t *testing.T, data []byte) []byte{
	"deleted": nil,
	"middle line removed": func(t *testing.T, data []byte) []byte {
		ls := strings.SplitAfter(string(data), "\n")
		return []byte(strings.Join(slices.Delete(ls, 3, 4), ""))
	},
	"last line torn": func(t *testing.T, data []byte) []byte {
		return data[:len(data)-20]
	},
	"bytes flipped": func(t *testing.T, data []byte) []byte {
		i := bytes.Index(data, []byte("dream: 3"))
		if i < 0 {
			t.Fatalf("no subject to damage in %q", data)
		}
		data[i+7] = '8'
		return data
	},
	"another format": func(t *testing.T, data []byte) []byte {
		return []byte("not an index\n")
	},
	"empty": func(t *testing.T, data []byte) []byte { return nil },
}

func TestCommitIndexRebuilt(t *testing.T) {
	gitBin(t)
	for name, f := range indexDamage {
		t.Run(name, func(t *testing.T) {
			s, dir := openStore(t)
			var cs []gitstore.Commit
			for i := range 6 {
				testkit.WriteFile(t, dir, "memory/MEMORY.md", strings.Repeat("x\n", i+1))
				cs = append(cs, mustCommit(t, s, "dream: "+string(rune('0'+i))))
			}
			testkit.WriteFile(t, dir, "USER.md", "by hand\n")
			mustCommit(t, s, "manual: last")
			want := gitLog(t, dir)
			if got := storeLog(t, s); !slices.Equal(got, want) { // writes the index
				t.Fatalf("Log = %q, want %q", got, want)
			}
			p := filepath.Join(dir, ".git", gitstore.CommitIndexFile)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("no commit index after a Log: %v", err)
			}
			if f == nil {
				err = os.Remove(p)
			} else {
				err = os.WriteFile(p, f(t, data), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}

			// A Store opened now reads the damaged file.
			s2, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
			if err != nil {
				t.Fatal(err)
			}
			if got := latest(t, s2, "dream:"); got.SHA != cs[5].SHA {
				t.Errorf("Latest = %q, want %q", got.Subject, cs[5].Subject)
			}
			if got := storeLog(t, s2); !slices.Equal(got, want) {
				t.Errorf("Log = %q, want %q", got, want)
			}
			if _, _, err := s2.Latest("nothing:", nil); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
				t.Errorf("Latest(nothing:) = %v, want ErrNoMatchingCommit", err)
			}
			// Every commit is still in the history for a restore, the one
			// a removed line named too.
			if _, err := s2.Restore(cs[1].Short, nil, gitstore.RestoreOptions{}); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if got := testkit.ReadFile(t, dir, "memory/MEMORY.md"); got != strings.Repeat("x\n", 5) {
				t.Errorf("MEMORY.md = %q, want the line of dream: 1 gone", got)
			}
			if got, _ := os.ReadFile(p); bytes.Equal(got, data) || len(got) <= len(data) {
				t.Errorf("index not rebuilt and extended:\n%s", got)
			}
			checkGit(t, s2, dir)
		})
	}
}
