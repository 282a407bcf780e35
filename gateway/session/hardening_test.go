package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
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

// An idle session's file is closed; the session stays loaded and its next
// append opens the file again.
func TestCloseIdleFiles(t *testing.T) {
	st, err := NewStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 4, 3, 10, 0, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	quiet, _ := st.Get("slack:C1")
	busy, _ := st.Get("slack:C2")
	if err := quiet.Append(llm.Message{Role: llm.RoleUser, Content: "one"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute)
	if err := busy.Append(llm.Message{Role: llm.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	if n := st.CloseIdleFiles(now.Add(-5 * time.Minute)); n != 1 {
		t.Fatalf("closed %d files, want 1 (the quiet session's)", n)
	}
	if quiet.file != nil || busy.file == nil {
		t.Errorf("quiet open %v, busy open %v; want only the busy one open", quiet.file != nil, busy.file != nil)
	}
	if after := openFDs(t); before >= 0 && after != before-1 {
		t.Errorf("open descriptors %d -> %d, want one fewer", before, after)
	}
	if n := st.CloseIdleFiles(now.Add(-5 * time.Minute)); n != 0 {
		t.Errorf("closed %d files again", n)
	}
	if err := quiet.Append(llm.Message{Role: llm.RoleUser, Content: "two"}); err != nil {
		t.Fatalf("append after close: %v", err)
	}
	b, err := os.ReadFile(quiet.prefix + ".jsonl")
	if err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"two"`) {
		t.Errorf("session file after reopening = %q, %v", b, err)
	}
	if got, _ := st.Get("slack:C1"); got != quiet {
		t.Error("closing the file unloaded the session")
	}
}

// openFDs counts this process's open descriptors, -1 where /proc is absent.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}
