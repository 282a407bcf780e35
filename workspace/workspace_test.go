package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestWriteFileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "memory", "new", ".cursor")
	if err := WriteFile(p, []byte("41"), 0o644); err != nil {
		t.Fatalf("WriteFile into a missing directory: %v", err)
	}
	if err := WriteFile(p, []byte("42"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "42" {
		t.Fatalf("content = %q, %v", b, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want exactly 0600", fi.Mode(), err)
	}
	if left := temps(t, filepath.Dir(p)); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

// Concurrent writers of one file each use their own temp file: every write
// succeeds (a shared fixed temp name would make them clobber or fail on
// each other), and the file ends up holding one complete write.
func TestWriteFileConcurrentWritersUseUniqueTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state")
	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			errs <- WriteFile(p, []byte(strings.Repeat(string(rune('a'+i)), 4096)), 0o644)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent WriteFile: %v", err)
		}
	}
	b, _ := os.ReadFile(p)
	if len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
		t.Errorf("the file is not one complete write: %d bytes, starting %q", len(b), b[:min(len(b), 8)])
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

// A write that fails before the rename leaves the old file and no temp.
func TestWriteFileFailureKeepsOldContent(t *testing.T) {
	root := openRoot(t)
	if err := os.WriteFile(filepath.Join(root.Dir(), "USER.md"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory at the target: the rename over it fails.
	if err := os.Mkdir(filepath.Join(root.Dir(), "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root.Dir(), "memory", "MEMORY.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root.Dir(), "memory", "MEMORY.md", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile(Memory, []byte("new"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	if left := temps(t, filepath.Join(root.Dir(), "memory")); len(left) != 0 {
		t.Errorf("temp files left behind after a failed write: %v", left)
	}
	if b, _ := os.ReadFile(filepath.Join(root.Dir(), "USER.md")); string(b) != "old" {
		t.Errorf("an unrelated file changed: %q", b)
	}
}

func TestRootStaysInside(t *testing.T) {
	root := openRoot(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root.Dir(), "out")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	for _, rel := range []string{"../escape.md", "out/escape.md"} {
		if err := root.WriteFile(rel, []byte("x"), 0o644); err == nil {
			t.Errorf("WriteFile(%q) escaped the workspace", rel)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files written outside: %v", entries)
	}
}

func TestRemoveMissingIsNoError(t *testing.T) {
	root := openRoot(t)
	if err := root.Remove("memory/MEMORY.md"); err != nil {
		t.Errorf("Remove of a missing file: %v", err)
	}
	if err := root.WriteFile(User, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := root.Remove(User); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Lstat(User); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("USER.md still there: %v", err)
	}
}

func TestResolve(t *testing.T) {
	root := openRoot(t)
	if err := os.WriteFile(filepath.Join(root.Dir(), "USER.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root.Dir(), "link")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	tests := []struct {
		path string
		want string // "" refused
		rule error
	}{
		{"./memory//MEMORY.md", "memory/MEMORY.md", nil},
		{"USER.md", "USER.md", nil},
		{".", ".", nil},
		{"", "", ErrInvalidPath},
		{"a\x00b", "", ErrInvalidPath},
		{`memory\MEMORY.md`, "", ErrInvalidPath},
		{"/etc/passwd", "", ErrOutsideWorkspace},
		{"~/x", "", ErrOutsideWorkspace},
		{"memory/../../x", "", ErrOutsideWorkspace},
		{"link/x", "", ErrSymlink},
		{"USER.md/x", "", ErrInvalidPath},
		{strings.Repeat("a/", 600), "", ErrInvalidPath},
	}
	for _, tt := range tests {
		rel, _, err := root.Resolve(tt.path)
		if tt.rule != nil {
			if !errors.Is(err, tt.rule) {
				t.Errorf("Resolve(%q) = %q, %v; want %v", tt.path, rel, err, tt.rule)
			} else if strings.Contains(err.Error(), root.Dir()) {
				t.Errorf("Resolve(%q) error reveals the workspace location: %v", tt.path, err)
			}
			continue
		}
		if err != nil || rel != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.path, rel, err, tt.want)
		}
	}
}

// Exclusive serialises: two sections never overlap.
func TestExclusive(t *testing.T) {
	root := openRoot(t)
	var inside, overlaps int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_ = root.Exclusive(func() error {
				mu.Lock()
				inside++
				if inside > 1 {
					overlaps++
				}
				mu.Unlock()
				for range 100 {
					runtime.Gosched() // let the others try to enter
				}
				mu.Lock()
				inside--
				mu.Unlock()
				return nil
			})
		})
	}
	wg.Wait()
	if overlaps != 0 {
		t.Errorf("%d overlapping sections", overlaps)
	}
	want := errors.New("x")
	if err := root.Exclusive(func() error { return want }); err != want {
		t.Errorf("Exclusive returned %v, want f's error", err)
	}
}

func TestLayout(t *testing.T) {
	mem := MemoryFiles()
	if !slices.Equal(mem, []string{"SOUL.md", "USER.md", "memory/MEMORY.md"}) {
		t.Errorf("MemoryFiles = %v", mem)
	}
	mem[0] = "changed"
	if MemoryFiles()[0] != Soul {
		t.Error("MemoryFiles hands out shared state")
	}
	for _, rel := range MemoryFiles() {
		if slices.Contains(ProgramFiles(), rel) {
			t.Errorf("%s is both a memory file and a program file", rel)
		}
	}
	for _, rel := range []string{History, Cursor, DreamCursor, DreamLedger, DreamStage + "/", LegacyDreamDeep, LegacyDreamState, LegacyDreamIntent, HistoryIndex, GitIgnore, GitDir + "/"} {
		if !slices.Contains(ProgramFiles(), rel) {
			t.Errorf("ProgramFiles lacks %s", rel)
		}
		if slices.Contains(MemoryFiles(), rel) {
			t.Errorf("%s is both a program file and a memory file", rel)
		}
	}
}

func openRoot(t *testing.T) *Root {
	t.Helper()
	r, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// temps lists WriteFile's temp files left in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}
