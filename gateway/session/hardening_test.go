package session

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Temp files of metadata writes killed mid-way are removed when the store
// opens; fresh ones (a write running in another process) and the session
// files stay.
func TestNewStoreRemovesLeftoverTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name -> must survive
		"c2xhY2s6QzE.jsonl":                       true,
		"c2xhY2s6QzE.meta.json":                   true,
		"c2xhY2s6QzE.meta.json.tmp123456":         false,
		"c2xhY2s6QzI.meta.json.tmp":               false,
		".dreamgate-tmp-ABCDEFGHIJKLMNOPQRSTUVWX": false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fresh := ".dreamgate-tmp-WRITINGNOWWRITINGNOWWRITIN"
	if err := os.WriteFile(filepath.Join(dir, fresh), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	files[fresh] = true

	if _, err := NewStore(dir, nil); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	for name, keep := range files {
		if slices.Contains(left, name) != keep {
			t.Errorf("%s: present %v, want %v (left: %v)", name, !keep, keep, left)
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}
