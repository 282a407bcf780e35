package dream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSnapshotPutBack: a failed phase 2's edits are undone file by file;
// untouched files are not rewritten and links are left alone.
func TestSnapshotPutBack(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	writeFile(t, ws, "SOUL.md", initSoul)
	writeFile(t, outside, "user.md", "outside\n")
	if err := os.Symlink(filepath.Join(outside, "user.md"), filepath.Join(ws, "USER.md")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	if err := os.Chmod(filepath.Join(ws, "SOUL.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	// memory/MEMORY.md is missing.
	snaps, err := snapshot(ws)
	if err != nil {
		t.Fatal(err)
	}

	writeFile(t, ws, "SOUL.md", "half-edited\n")
	writeFile(t, ws, "memory/MEMORY.md", "created by a failed run\n")
	restored, err := putBack(ws, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SOUL.md", "memory/MEMORY.md"}; !reflect.DeepEqual(restored, want) {
		t.Errorf("restored = %v, want %v", restored, want)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "SOUL.md"))
	if string(b) != initSoul {
		t.Errorf("SOUL.md = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(ws, "SOUL.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("SOUL.md mode = %v, %v; want 0600 kept", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(ws, "memory", "MEMORY.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MEMORY.md created by the failed run still exists: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "user.md")); string(b) != "outside\n" {
		t.Errorf("the link's target was touched: %q", b)
	}
	if restored, err := putBack(ws, snaps); err != nil || len(restored) != 0 {
		t.Errorf("second putBack rewrote %v, %v", restored, err)
	}
}
