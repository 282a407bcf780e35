package memory

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// A file memory never reads (a link, a folder where a file should be) is
// left out of a scope's facts and hot files, which hold the scope's other
// files, and the operator is told once, however many readers meet it;
// again only after the file was put right and broke anew.
func TestAFileLeftOutIsToldOnce(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "scopes", string(team))
	testkit.WriteFile(t, dir, "SOUL.md", "- Be brief. <!-- durable 2026-01-02 id:00a1 -->\n")
	testkit.WriteFile(t, dir, "memory/COLD.md", "- Ships on Mondays. <!-- durable 2025-01-02 id:00a2 -->\n")
	outside := filepath.Join(t.TempDir(), "secret.md")
	testkit.WriteFile(t, filepath.Dir(outside), "secret.md", "- The vault code is 4711. <!-- durable 2026-01-02 id:00a3 -->\n")
	user := filepath.Join(dir, "USER.md")
	if err := os.Symlink(outside, user); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory", "MEMORY.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogRecorder{}
	m := New(NewDisk(ws), false).WithLogger(logs.Logger())
	told := func() map[string]int {
		n := map[string]int{}
		for _, r := range logs.Records() {
			if strings.HasPrefix(r.Message, "a memory file is left out") {
				n[r.Attrs["file"]]++
			}
		}
		return n
	}
	for range 3 {
		facts, err := m.Facts(team)
		if err != nil {
			t.Fatalf("Facts: %v", err)
		}
		if !facts.Has("00a1") || !facts.Has("00a2") || facts.Has("00a3") {
			t.Errorf("the facts: %+v", facts.byID)
		}
		files, err := m.Hot(team)
		if err != nil {
			t.Fatalf("Hot: %v", err)
		}
		if files[0].Text == "" || files[1].Text != "" || files[2].Text != "" {
			t.Errorf("the hot files: %+v", files)
		}
		if _, err := m.Shown(team, User); !errors.Is(err, ErrLink) || !LeftOut(err) {
			t.Errorf("Shown(USER.md) = %v, want ErrLink", err)
		}
		if _, err := m.Shown(team, Long); !errors.Is(err, ErrNotRegular) || !LeftOut(err) {
			t.Errorf("Shown(MEMORY.md) = %v, want ErrNotRegular", err)
		}
	}
	if n := told(); n[User] != 1 || n[Long] != 1 || len(n) != 2 {
		t.Errorf("told %v, want each left-out file once:\n%+v", n, logs.Records())
	}

	// Put right, then linked again: told again.
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "- Ana.\n")
	if _, err := m.Shown(team, User); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Shown(team, User); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, user); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Hot(team); err != nil {
		t.Fatal(err)
	}
	if n := told(); n[User] != 2 {
		t.Errorf("told %v, want USER.md again after it was put right", n)
	}
}
