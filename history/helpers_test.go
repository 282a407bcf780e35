package history

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// logRecorder is a slog.Handler that keeps records, to check what was
// warned about and how often.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// count returns how many records at level had message msg.
func (r *logRecorder) count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if rec.Level == level && rec.Message == msg {
			n++
		}
	}
	return n
}

// attrs returns the string values of key in records with message msg.
func (r *logRecorder) attrs(msg, key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
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

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
