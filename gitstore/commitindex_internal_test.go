package gitstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// An index whose lines are well formed (checksums, parent chain, HEAD) but
// name the wrong subject is not believed: what Latest returns is read from
// the repository and checked, and the index is rebuilt.
func TestCommitIndexCheckedAgainstRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(file, content, subject string) Commit {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := s.Commit(subject, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dream := commit("USER.md", "a\n", "dream: the real one")
	commit("SOUL.md", "b\n", "manual: by hand")
	if _, _, err := s.Latest("dream:", nil); err != nil { // writes the index
		t.Fatal(err)
	}

	// Rewrite the newest entry as a Dream commit, with a valid checksum.
	x := s.idx
	x.entries[len(x.entries)-1].subject = "dream: forged"
	s.saveIndexFile(x)

	s2, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := s2.Latest("dream:", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.SHA != dream.SHA {
		t.Errorf("Latest = %s %q, want %s %q", c.Short, c.Subject, dream.Short, dream.Subject)
	}
	data, err := os.ReadFile(s2.indexPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "forged") || !strings.Contains(string(data), "manual: by hand") {
		t.Errorf("index not rebuilt:\n%s", data)
	}
}

// trackedState is lookup for every tracked file at once; it must agree with
// lookup on trees where a tracked path is a directory, runs through a file,
// or is missing.
func TestTrackedStateAgreesWithLookup(t *testing.T) {
	tracked := []string{"a/b/c.md", "a/d.md", "x.md", "y/z.md", "top.md"}
	s, err := Open(filepath.Join(t.TempDir(), "ws"), Options{Tracked: tracked})
	if err != nil {
		t.Fatal(err)
	}
	blob := func(data string, mode filemode.FileMode) workFile {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(data))
		if err := s.storeObject(plumbing.BlobObject, []byte(data)); err != nil {
			t.Fatal(err)
		}
		return workFile{blobState: blobState{exists: true, mode: mode, hash: h}}
	}
	shapes := map[string]map[string]workFile{
		"all there": {"a/b/c.md": blob("c", filemode.Regular), "a/d.md": blob("d", filemode.Executable),
			"x.md": blob("x", filemode.Symlink), "y/z.md": blob("z", filemode.Regular), "top.md": blob("t", filemode.Regular)},
		"file where a directory is": {"a/b": blob("not a dir", filemode.Regular), "a/d.md": blob("d", filemode.Regular)},
		"directory where a file is": {"x.md/inner": blob("i", filemode.Regular), "top.md/deeper/f": blob("f", filemode.Regular)},
		"nothing tracked":           {"other.md": blob("o", filemode.Regular)},
	}
	for name, edits := range shapes {
		t.Run(name, func(t *testing.T) {
			tree, _, err := s.editTree(plumbing.ZeroHash, edits)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.trackedState(tree)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range s.tracked {
				want, err := s.lookup(tree, p)
				if err != nil {
					t.Fatal(err)
				}
				if got[i] != want {
					t.Errorf("%s: trackedState %+v, lookup %+v", p, got[i], want)
				}
			}
		})
	}
}
