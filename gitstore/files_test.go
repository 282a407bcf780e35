package gitstore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// recordingFiles is a caller's Files: it writes plainly and records what
// the Store asked of it.
type recordingFiles struct {
	dir string

	mu      sync.Mutex
	writes  []string
	removes []string
}

func (f *recordingFiles) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	f.mu.Lock()
	f.writes = append(f.writes, rel)
	f.mu.Unlock()
	p := filepath.Join(f.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, perm)
}

func (f *recordingFiles) Remove(rel string) error {
	f.mu.Lock()
	f.removes = append(f.removes, rel)
	f.mu.Unlock()
	if err := os.Remove(filepath.Join(f.dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func TestOpenNeedsTrackedFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := gitstore.Open(dir, gitstore.Options{}); !errors.Is(err, gitstore.ErrNoTrackedFiles) {
		t.Fatalf("Open without tracked files = %v, want ErrNoTrackedFiles", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Open created a repository: %v", err)
	}
}

// TestRestoreWritesThroughCallerFiles: the files a restore puts back, and
// the ones it deletes, go through the caller's Files (the workspace's
// atomic write), never around it; so does an extended .gitignore.
func TestRestoreWritesThroughCallerFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	files := &recordingFiles{dir: dir}
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Files: files, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "- Name: Ana.\n")
	mustCommit(t, s, "manual: setup")
	testkit.WriteFile(t, dir, "USER.md", "- Name: Ana.\n- Likes tea.\n")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- new\n")
	x := mustCommit(t, s, "dream: tea")

	// Reopened tracking one more file: the .gitignore gains its line.
	files.writes = nil
	more := append(slices.Clone(gitstore.TestTracked), "memory/PROJECTS.md")
	s, err = gitstore.Open(dir, gitstore.Options{Tracked: more, Files: files, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files.writes, ".gitignore") {
		t.Errorf("the .gitignore was extended around the caller's Files (writes %v)", files.writes)
	}
	testkit.WriteFile(t, dir, "memory/PROJECTS.md", "- dreamgate\n")
	y := mustCommit(t, s, "dream: projects")

	files.writes, files.removes = nil, nil
	if _, err := s.Restore(x.SHA, nil, gitstore.RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	slices.Sort(files.writes)
	if want := []string{"USER.md", "memory/MEMORY.md"}; !slices.Equal(files.writes, want) {
		t.Errorf("restore wrote %v through Files, want %v", files.writes, want)
	}
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "- Name: Ana.\n" {
		t.Errorf("USER.md = %q after the restore", got)
	}
	files.writes, files.removes = nil, nil
	if _, err := s.Restore(y.SHA, nil, gitstore.RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !slices.Equal(files.removes, []string{"memory/PROJECTS.md"}) || len(files.writes) != 0 {
		t.Errorf("restore removed %v and wrote %v through Files, want memory/PROJECTS.md removed", files.removes, files.writes)
	}
}
