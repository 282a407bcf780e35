package leftovers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestSweepRemovesOnlyOldTemps(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * MinAge)
	files := map[string]time.Time{
		"tmp_obj_old":   old, // an old temp: removed
		"tmp_obj_young": now, // a write going on now: kept
		"keep_old":      old, // not a temp: kept
	}
	for name, mtime := range files {
		testkit.WriteFile(t, dir, name, "x")
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// A directory with a temp's name is not a file: kept.
	if err := os.Mkdir(filepath.Join(dir, "tmp_obj_dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := Sweep(dir, now.Add(-MinAge), func(name string) bool { return strings.HasPrefix(name, "tmp_obj_") })
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1, nil", n, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"keep_old", "tmp_obj_dir", "tmp_obj_young"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
}

func TestSweepOfAMissingDirectory(t *testing.T) {
	n, err := Sweep(filepath.Join(t.TempDir(), "missing"), time.Now(), func(string) bool { return true })
	if n != 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sweep = %d, %v; want 0 and fs.ErrNotExist", n, err)
	}
}
