package gitstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An index whose lines are well formed (checksums, parent chain, HEAD) but
// name the wrong subject is not believed: what Latest returns is read from
// the repository and checked, and the index is rebuilt.
func TestCommitIndexCheckedAgainstRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := Open(dir, Options{})
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
	if _, _, err := s.Latest("dream:"); err != nil { // writes the index
		t.Fatal(err)
	}

	// Rewrite the newest entry as a Dream commit, with a valid checksum.
	x := s.idx
	x.entries[len(x.entries)-1].subject = "dream: forged"
	s.saveIndexFile(x)

	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := s2.Latest("dream:")
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
