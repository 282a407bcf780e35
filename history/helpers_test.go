package history

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyTree copies a testdata directory into a fresh temp dir and returns the
// copy's path.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fixedNow() time.Time { return time.Date(2026, 4, 3, 0, 2, 30, 0, time.Local) }

// openTestStore opens a Store on dir with a fixed clock.
func openTestStore(t *testing.T, dir string, logger *slog.Logger) *Store {
	t.Helper()
	s, err := Open(dir, Options{Logger: logger, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cursors(es []Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Cursor
	}
	return out
}

// tempFiles lists what an atomic write may leave in dir when it goes wrong:
// any entry that is none of the store's own files.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{historyFile: true, cursorFile: true, dreamCursorFile: true, lockFile: true, indexFile: true}
	var out []string
	for _, e := range entries {
		if !own[e.Name()] && !strings.HasPrefix(e.Name(), legacyFile) {
			out = append(out, e.Name())
		}
	}
	return out
}
