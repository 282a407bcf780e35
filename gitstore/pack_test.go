package gitstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestPack(t *testing.T) {
	s, dir := openStore(t)
	for i := range 20 {
		testkit.WriteFile(t, dir, "memory/MEMORY.md", strings.Repeat(fmt.Sprintf("- fact %d\n", i), i+1))
		mustCommit(t, s, fmt.Sprintf("dream: %d", i))
	}
	// A second Store on the same workspace, as a gateway running beside a
	// CLI `dream run`: it must keep reading after the other one packed.
	other, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	dangling, _, _ := craftAmbiguity(t, dir) // unreachable objects must survive packing too
	before, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}

	if n, err := s.Pack(); err != nil || n != 0 {
		t.Fatalf("Pack below the threshold = %d, %v; want 0, nil", n, err)
	}
	gitstore.SetPackThreshold(s, -1)
	n, err := s.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if want := looseCount(t, dir); n < 80 || want != 0 {
		t.Fatalf("Pack packed %d objects and left %d loose files", n, want)
	}

	for _, st := range []*gitstore.Store{s, other} {
		after, err := st.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(shas(after), shas(before)) {
			t.Fatalf("history changed by packing")
		}
		if _, d, err := st.Show(before[3].Short, nil); err != nil || len(d.Files) != 1 {
			t.Fatalf("Show after packing: %+v, %v", d, err)
		}
		if c, _, err := st.Show(dangling.String(), nil); err != nil || c.SHA != dangling.String() {
			t.Fatalf("the dangling commit was lost by packing: %v", err)
		}
	}
	if _, err := s.Restore(before[5].Short, nil, gitstore.RestoreOptions{Resolution: gitstore.UndoAll}); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "after packing\n")
	mustCommit(t, other, "dream: after packing")
	checkGit(t, s, dir)
}

func looseCount(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	dirs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "[0-9a-f][0-9a-f]"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		names, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		n += len(names)
	}
	return n
}
