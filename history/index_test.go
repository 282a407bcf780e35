package history

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// indexedStore opens a Store on dir that writes an index after any
// progress (the default waits for 256 KiB).
func indexedStore(t *testing.T, dir string, logger *slog.Logger) *Store {
	t.Helper()
	s := openTestStore(t, dir, logger)
	s.indexMin = 1
	return s
}

// fillHistory appends n entries alternating between sessions "a" and "b"
// and sets the dream cursor to dream, through a store that writes the
// index; it returns the file's size.
func fillHistory(t *testing.T, dir string, n, dream int) int64 {
	t.Helper()
	s := indexedStore(t, dir, nil)
	for i := 1; i <= n; i++ {
		if _, err := s.Append(fmt.Sprintf("- fact %d", i), []string{"a", "b"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDreamCursor(dream); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// view is what a store shows of the history, to compare a store that used
// the index with one that read the file whole.
type view struct {
	unreadA, unreadB, since []int
	len, last               int
}

func look(t *testing.T, s *Store, since int) view {
	t.Helper()
	var v view
	a, err1 := s.Unread("a")
	b, err2 := s.Unread("b")
	all, err3 := s.Since(since, 0)
	n, err4 := s.Len()
	last, err5 := s.LastCursor()
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			t.Fatal(err)
		}
	}
	v.unreadA, v.unreadB, v.since, v.len, v.last = cursors(a), cursors(b), cursors(all), n, last
	return v
}

func (v view) String() string {
	return fmt.Sprintf("unread a %v, b %v; since %v; len %d; last %d", v.unreadA, v.unreadB, v.since, v.len, v.last)
}

// TestIndexSkipsReadEntries: a new store (a new process) starts reading
// where the unread entries begin, and still sees everything as a store
// that read the whole file does.
func TestIndexSkipsReadEntries(t *testing.T) {
	dir := t.TempDir()
	size := fillHistory(t, dir, 40, 30)
	if _, err := os.Stat(filepath.Join(dir, indexFile)); err != nil {
		t.Fatalf("no index written: %v", err)
	}
	s := indexedStore(t, dir, nil)
	got := look(t, s, 30)
	want := view{unreadA: []int{32, 34, 36, 38, 40}, unreadB: []int{31, 33, 35, 37, 39},
		since: []int{31, 32, 33, 34, 35, 36, 37, 38, 39, 40}, len: 40, last: 40}
	if got.String() != want.String() {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if s.readBytes*3 > size {
		t.Errorf("read %d of %d bytes: the read entries were parsed", s.readBytes, size)
	}
	if e, err := s.Append("- next", "a"); err != nil || e.Cursor != 41 {
		t.Errorf("Append after an indexed start = %d, %v; want cursor 41", e.Cursor, err)
	}
	// Reaching below the floor still reads the file.
	if all, err := s.Since(0, 0); err != nil || len(all) != 41 {
		t.Errorf("Since(0) = %d entries, %v", len(all), err)
	}
	// Numbering also holds without .cursor: the index remembers the read
	// part's highest cursor.
	if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil {
		t.Fatal(err)
	}
	if err := indexedStore(t, dir, nil).SetDreamCursor(41); err != nil {
		t.Fatal(err)
	}
	s = indexedStore(t, dir, nil)
	if e, err := s.Append("- after", "b"); err != nil || e.Cursor != 42 {
		t.Errorf("Append without .cursor = %d, %v; want 42", e.Cursor, err)
	}
}

// TestIndexIgnoredWhenItDoesNotHold: an index that does not match the file
// or the dream cursor is not used; the file is read whole and nothing is
// skipped.
func TestIndexIgnoredWhenItDoesNotHold(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string) // after the index was written at dream cursor 30 of 40
		since  int
	}{
		{"dream cursor moved back", func(t *testing.T, dir string) {
			testkit.WriteFile(t, "", filepath.Join(dir, dreamCursorFile), "10")
		}, 10},
		{"compacted by another process", func(t *testing.T, dir string) {
			other := openTestStore(t, dir, nil)
			if _, err := other.Compact(12); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, "", filepath.Join(dir, indexFile), testkit.ReadFile(t, "", filepath.Join(dir+".saved", indexFile)))
		}, 30},
		{"rewritten in place, first entries dropped", func(t *testing.T, dir string) {
			path := filepath.Join(dir, historyFile)
			lines := strings.SplitAfter(testkit.ReadFile(t, "", path), "\n")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Longer than before, so the index's offset is inside it.
			for _, l := range append(lines[2:], lines[2:]...) {
				if _, err := f.WriteString(l); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
		}, 30},
		{"replaced by another file with the same bytes at both ends", func(t *testing.T, dir string) {
			// Here the part before the offset holds an unread entry (50).
			path := filepath.Join(dir, historyFile)
			data := strings.Replace(testkit.ReadFile(t, "", path), `{"cursor": 10,`, `{"cursor": 50,`, 1)
			testkit.WriteFile(t, "", path+".new", data)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}, 30},
		{"line before the offset changed in place", func(t *testing.T, dir string) {
			path := filepath.Join(dir, historyFile)
			data := testkit.ReadFile(t, "", path)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			at := strings.Index(data, `"- fact 30"`)
			if _, err := f.WriteAt([]byte(`"- FACT 30"`), int64(at)); err != nil {
				t.Fatal(err)
			}
		}, 30},
		{"offset beyond the file", func(t *testing.T, dir string) {
			path := filepath.Join(dir, historyFile)
			data := testkit.ReadFile(t, "", path)
			cut := strings.Index(data, `{"cursor": 20,`)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(data[:cut]); err != nil {
				t.Fatal(err)
			}
		}, 10},
		{"garbage", func(t *testing.T, dir string) {
			testkit.WriteFile(t, "", filepath.Join(dir, indexFile), `{"version": 1, "offset": "x`)
		}, 30},
		{"a later version", func(t *testing.T, dir string) {
			path := filepath.Join(dir, indexFile)
			testkit.WriteFile(t, "", path, strings.Replace(testkit.ReadFile(t, "", path), `"version":2`, `"version":3`, 1))
		}, 30},
		{"an earlier version", func(t *testing.T, dir string) {
			path := filepath.Join(dir, indexFile)
			testkit.WriteFile(t, "", path, strings.Replace(testkit.ReadFile(t, "", path), `"version":2`, `"version":1`, 1))
		}, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "memory")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			fillHistory(t, dir, 40, 30)
			if err := os.Mkdir(dir+".saved", 0o755); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, "", filepath.Join(dir+".saved", indexFile), testkit.ReadFile(t, "", filepath.Join(dir, indexFile)))
			tt.change(t, dir)
			whole := openTestStore(t, dir, nil)
			whole.indexMin = 1 << 62 // never looks for the index
			want := look(t, whole, tt.since)
			fi, err := os.Stat(filepath.Join(dir, historyFile))
			if err != nil {
				t.Fatal(err)
			}
			s := indexedStore(t, dir, nil) // looks for the index, and may write a new one
			if _, err := s.Unread("a"); err != nil {
				t.Fatal(err)
			}
			if s.readBytes != fi.Size() {
				t.Errorf("read %d of %d bytes: the index was used", s.readBytes, fi.Size())
			}
			if got := look(t, s, tt.since); got.String() != want.String() {
				t.Errorf("with the index:    %v\nreading the file: %v", got, want)
			}
		})
	}
}

// TestNoIndexForCursorsOutOfOrder: a hand-edited file whose cursors go
// down has no prefix of read entries to vouch for; no index is written and
// every unread entry is found.
func TestNoIndexForCursorsOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for _, c := range []int{1, 2, 9, 3, 4, 5, 6} {
		b.Write(appendEntryJSON(nil, Entry{Cursor: c, Timestamp: "t", Content: fmt.Sprint("- fact ", c), SessionKey: "a"}))
		b.WriteByte('\n')
	}
	testkit.WriteFile(t, "", filepath.Join(dir, historyFile), b.String())
	testkit.WriteFile(t, "", filepath.Join(dir, dreamCursorFile), "5")
	s := indexedStore(t, dir, nil)
	if got, err := s.Unread("a"); err != nil || !slices.Equal(cursors(got), []int{9, 6}) {
		t.Errorf("Unread = %v, %v; want [9 6]", cursors(got), err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexFile)); err == nil {
		t.Error("an index was written for a file whose cursors are out of order")
	}
	if got, err := indexedStore(t, dir, nil).Unread("a"); err != nil || !slices.Equal(cursors(got), []int{9, 6}) {
		t.Errorf("a second store: Unread = %v, %v; want [9 6]", cursors(got), err)
	}
}

// TestUnreadLastPerSession: a session's unread entries come from its own
// index, across appends and a moving dream cursor.
func TestUnreadLastPerSession(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	for i := 1; i <= 12; i++ {
		if _, err := s.Append(fmt.Sprint("- ", i), []string{"a", "b", "c"}[i%3]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(key string, n int, want []int) {
		t.Helper()
		got, err := s.UnreadLast(key, n)
		if err != nil || !slices.Equal(cursors(got), want) {
			t.Errorf("UnreadLast(%q, %d) = %v, %v; want %v", key, n, cursors(got), err, want)
		}
	}
	check("a", 0, []int{3, 6, 9, 12})
	check("b", 2, []int{7, 10})
	check("none", 0, []int{})
	if err := s.SetDreamCursor(6); err != nil {
		t.Fatal(err)
	}
	check("a", 0, []int{9, 12})
	check("c", 5, []int{8, 11})
	if _, err := s.Append("- 13", "b"); err != nil {
		t.Fatal(err)
	}
	check("b", 0, []int{7, 10, 13})
	testkit.WriteFile(t, "", filepath.Join(dir, dreamCursorFile), "2") // moved back by hand
	check("b", 2, []int{10, 13})
	check("c", 0, []int{5, 8, 11})
}

// TestArchivedAtSeesSourcesInTheSkippedPrefix: an archive entry whose
// recording was lost to a crash, and which Dream has read since, lies in
// the prefix a new store skips thanks to the index; ArchivedAt must still
// find it, or the slice is archived twice.
func TestArchivedAtSeesSourcesInTheSkippedPrefix(t *testing.T) {
	dir := t.TempDir()
	w := indexedStore(t, dir, nil)
	if _, err := w.AppendFrom(audience.Default, "- the crashed slice", "s", Source{SessionID: "gen1", From: 4, To: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFrom(audience.Default, "- another generation", "s", Source{SessionID: "gen0", From: 0, To: 3}); err != nil {
		t.Fatal(err)
	}
	size := fillHistory(t, dir, 40, 42)

	s := indexedStore(t, dir, nil)
	if _, err := s.Len(); err != nil {
		t.Fatal(err)
	}
	if s.readBytes >= size/3 {
		t.Fatalf("the new store read %d of %d bytes: the index was not used, so this test proves nothing", s.readBytes, size)
	}
	e, ok, err := s.ArchivedAt("s", "gen1", 4)
	if err != nil || !ok || e.Content != "- the crashed slice" || e.Range != [2]int{4, 9} {
		t.Fatalf("ArchivedAt(s, gen1, 4) = %+v, %v, %v; want the entry in the skipped prefix", e, ok, err)
	}
	if _, ok, _ := s.ArchivedAt("s", "gen1", 9); ok {
		t.Error("ArchivedAt found a range that starts elsewhere")
	}
}
