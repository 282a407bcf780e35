package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

const malformedMsg = "skipping a malformed history.jsonl line (further ones of this kind not logged)"

// wholeView is what a store that reads the file whole (never the index)
// shows of dir.
func wholeView(t *testing.T, dir string, since int) view {
	t.Helper()
	whole := openTestStore(t, dir, nil)
	whole.indexMin = 1 << 62
	return look(t, whole, since)
}

// contents returns the entries' contents, to check that what is read back
// at the offsets is the entries' own.
func contents(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Content
	}
	return out
}

// sameUnread checks that s's UnreadLast(key, n) for several n is what a
// store reading the file whole returns, contents included, and that s
// answered without decoding the index's whole table.
func sameUnread(t *testing.T, s *Store, dir, key string) {
	t.Helper()
	whole := openTestStore(t, dir, nil)
	whole.indexMin = 1 << 62
	for _, n := range []int{0, 1, 3, 7, 50} {
		got, err1 := s.UnreadLast(key, n)
		want, err2 := whole.UnreadLast(key, n)
		if err1 != nil || err2 != nil || !slices.Equal(got, want) {
			t.Errorf("UnreadLast(%q, %d) = %v, %v; reading the file: %v, %v", key, n, cursors(got), err1, cursors(want), err2)
		}
	}
	if s.cache.lazy == nil {
		t.Error("UnreadLast decoded the whole table")
	}
}

// TestIndexTableSkipsTheUnreadScan: a new store takes the unread entries'
// table from the index instead of scanning them, reads back only the
// contents asked for, and shows what a store reading the file whole shows.
func TestIndexTableSkipsTheUnreadScan(t *testing.T) {
	dir := t.TempDir()
	fillHistory(t, dir, 40, 10)
	s := indexedStore(t, dir, nil)
	sameUnread(t, s, dir, "a")
	sameUnread(t, s, dir, "b")
	sameUnread(t, s, dir, "none")
	got := look(t, s, 10)
	if want := wholeView(t, dir, 10); got.String() != want.String() {
		t.Errorf("with the table:    %v\nreading the file: %v", got, want)
	}
	if s.readBytes != 0 {
		t.Errorf("scanned %d bytes: the table was not used", s.readBytes)
	}
	a, err := s.UnreadLast("a", 2)
	if err != nil || !slices.Equal(contents(a), []string{"- fact 38", "- fact 40"}) {
		t.Errorf("UnreadLast(a, 2) = %q, %v", contents(a), err)
	}
	// Dream reads on: the new floor holds for a store using the old table.
	if err := openTestStore(t, dir, nil).SetDreamCursor(35); err != nil {
		t.Fatal(err)
	}
	s = indexedStore(t, dir, nil)
	sameUnread(t, s, dir, "a")
	if got, want := look(t, s, 35), wholeView(t, dir, 35); got.String() != want.String() {
		t.Errorf("after Dream moved on, with the table: %v\nreading the file: %v", got, want)
	}
}

// TestIndexTableAppendedSinceSave: entries appended after the index was
// written (by a store that does not write one) are scanned, and only they.
func TestIndexTableAppendedSinceSave(t *testing.T) {
	dir := t.TempDir()
	size := fillHistory(t, dir, 40, 10)
	other := openTestStore(t, dir, nil)
	other.indexMin = 1 << 62 // never writes the index
	for i := 41; i <= 45; i++ {
		if _, err := other.Append(fmt.Sprintf("- late %d", i), "a"); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	s := indexedStore(t, dir, nil)
	s.indexMin = 1000 // uses the index, and writes none for what was appended
	sameUnread(t, s, dir, "a")
	sameUnread(t, s, dir, "b")
	got := look(t, s, 10)
	if want := wholeView(t, dir, 10); got.String() != want.String() {
		t.Errorf("with the table:    %v\nreading the file: %v", got, want)
	}
	if s.readBytes != fi.Size()-size {
		t.Errorf("scanned %d bytes; %d were appended since the index", s.readBytes, fi.Size()-size)
	}
	if a, err := s.UnreadLast("a", 1); err != nil || !slices.Equal(contents(a), []string{"- late 45"}) {
		t.Errorf("UnreadLast(a, 1) = %q, %v", contents(a), err)
	}
}

// TestIndexTableMismatchFallsBack: a table that does not hold for the file
// is not used: the file is read whole (with a warning when the index
// itself is damaged), and nothing is lost.
func TestIndexTableMismatchFallsBack(t *testing.T) {
	tests := []struct {
		name string
		warn bool
		// change runs after an index with a table of entries 11 to 40
		change func(t *testing.T, dir string)
	}{
		{"table damaged", true, func(t *testing.T, dir string) {
			path := filepath.Join(dir, indexFile)
			data := []byte(testkit.ReadFile(t, "", path))
			data[len(data)-3] ^= 0x01
			testkit.WriteFile(t, "", path, string(data))
		}},
		{"table cut short", true, func(t *testing.T, dir string) {
			path := filepath.Join(dir, indexFile)
			data := testkit.ReadFile(t, "", path)
			testkit.WriteFile(t, "", path, data[:len(data)-5])
		}},
		{"last unread line changed in place, mtime kept", false, func(t *testing.T, dir string) {
			path := filepath.Join(dir, historyFile)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			data := testkit.ReadFile(t, "", path)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			at := strings.Index(data, `{"cursor": 40,`)
			if _, err := f.WriteAt([]byte(`{"cursor": 41,`), int64(at)); err != nil {
				t.Fatal(err)
			}
			keepMTime(t, path, fi)
		}},
		{"an unread line rewritten in place, cursors kept", false, func(t *testing.T, dir string) {
			// Entry 25 loses its timestamp and 26 moves to another
			// session; the size and the end of the file are as they were.
			path := filepath.Join(dir, historyFile)
			data := testkit.ReadFile(t, "", path)
			data = strings.Replace(data, `{"cursor": 25, "timestamp"`, `{"cursor": 25, "timestamq"`, 1)
			data = strings.Replace(data, `"- fact 26", "session_key": "a"`, `"- fact 26", "session_key": "b"`, 1)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte(data), 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fillHistory(t, dir, 40, 10)
			tt.change(t, dir)
			want := wholeView(t, dir, 10)
			fi, err := os.Stat(filepath.Join(dir, historyFile))
			if err != nil {
				t.Fatal(err)
			}
			rec := &testkit.LogRecorder{}
			s := indexedStore(t, dir, slog.New(rec))
			if _, err := s.Len(); err != nil {
				t.Fatal(err)
			}
			if s.readBytes != fi.Size() {
				t.Errorf("scanned %d of %d bytes: the table was used", s.readBytes, fi.Size())
			}
			if got := look(t, s, 10); got.String() != want.String() {
				t.Errorf("with the index:    %v\nreading the file: %v", got, want)
			}
			if n := rec.Count(slog.LevelWarn, "the history index is unreadable; reading history.jsonl whole"); (n == 1) != tt.warn {
				t.Errorf("%d warnings about the index; want one: %v", n, tt.warn)
			}
		})
	}
}

// keepMTime sets path's mtime back to fi's, as if it had not changed.
func keepMTime(t *testing.T, path string, fi os.FileInfo) {
	t.Helper()
	if err := os.Chtimes(path, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestIndexTableStaleRead: a line rewritten in place behind the cache's
// back (same size, same mtime: nothing for a stat to see) is caught when
// its content is read back; the store reads the file again, without the
// index, and serves what it holds. (A content already read and kept is
// served as kept, as when the cache held every content.)
func TestIndexTableStaleRead(t *testing.T) {
	dir := t.TempDir()
	fillHistory(t, dir, 40, 10)
	s := indexedStore(t, dir, nil)
	if n, err := s.Len(); err != nil || n != 40 { // the cache, without any content
		t.Fatalf("Len = %d, %v", n, err)
	}
	path := filepath.Join(dir, historyFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := testkit.ReadFile(t, "", path)
	// 12 (session a) becomes session b, same length.
	data = strings.Replace(data, `"- fact 12", "session_key": "a"`, `"- fact 12", "session_key": "b"`, 1)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	keepMTime(t, path, fi)
	a, err := s.Unread("a")
	if err != nil {
		t.Fatal(err)
	}
	if got := cursors(a); slices.Contains(got, 12) || len(got) != 14 {
		t.Errorf("Unread(a) = %v: the rewritten line was not noticed", got)
	}
	b, err := s.Unread("b")
	if err != nil || !slices.Contains(cursors(b), 12) {
		t.Errorf("Unread(b) = %v, %v; want 12 in it", cursors(b), err)
	}
}

// TestIndexTableBrokenUnreadLine: a malformed line among the unread
// entries is skipped, by the store that scans it and by the next one,
// which takes the table from the index and still warns about it.
func TestIndexTableBrokenUnreadLine(t *testing.T) {
	dir := t.TempDir()
	fillHistory(t, dir, 20, 10)
	path := filepath.Join(dir, historyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"cursor": 21, "timestamp": "t", "content": 5}` + "\n" + `{"cursor": true}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fillHistory(t, dir, 4, 10) // cursors 21 to 24
	if err := os.Remove(filepath.Join(dir, indexFile)); err != nil {
		t.Fatal(err)
	}
	for i, what := range []string{"scanning", "from the table"} {
		rec := &testkit.LogRecorder{}
		s := indexedStore(t, dir, slog.New(rec))
		got := look(t, s, 10)
		if want := wholeView(t, dir, 10); got.String() != want.String() || got.len != 24 {
			t.Errorf("%s: %v\nreading the file: %v", what, got, want)
		}
		if (s.readBytes == 0) != (i == 1) {
			t.Errorf("%s: scanned %d bytes", what, s.readBytes)
		}
		if n := rec.Count(slog.LevelWarn, malformedMsg); n != 2 {
			t.Errorf("%s: %d warnings about malformed lines, want 2 (two kinds)", what, n)
		}
	}
}

// TestIndexTableAnotherProcessAppends: another process appends (and writes
// the index) while this one reads and appends: both this store and a new
// one see every entry, as a whole read does.
func TestIndexTableAnotherProcessAppends(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	fillHistory(t, dir, 40, 10)
	s := indexedStore(t, dir, nil)
	before := look(t, s, 10)
	s.indexMin = 1 << 62 // from now on, only the child writes the index
	cmd, out := appendChild(t, dir, 30, 3)
	sc := bufio.NewScanner(out)
	for i := 0; sc.Scan(); i++ {
		// Read and append while the child appends.
		if _, err := s.Unread("test:crash"); err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			if _, err := s.Append(fmt.Sprint("- parent ", i), "a"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	want := wholeView(t, dir, 10)
	if got := look(t, s, 10); got.String() != want.String() || want.len != before.len+40 {
		t.Errorf("this store:        %v\nreading the file: %v", got, want)
	}
	crash, err := s.Unread("test:crash")
	if err != nil || len(crash) != 30 {
		t.Fatalf("Unread(test:crash) = %d entries, %v", len(crash), err)
	}
	// A new store starts from the index the child wrote last, and scans
	// what the child appended after it.
	n := openTestStore(t, dir, nil) // production's indexMin: the tail is too short to write an index
	again, err := n.Unread("test:crash")
	if err != nil || !slices.Equal(again, crash) {
		t.Errorf("a new store reads back %v, %v; want %v", cursors(again), err, cursors(crash))
	}
	if fi, err := os.Stat(filepath.Join(dir, historyFile)); err != nil || n.readBytes == 0 || n.readBytes*2 > fi.Size() || n.cache.lazy == nil {
		t.Fatalf("the new store scanned %d bytes (lazy: %v): not a start from the child's index and a tail, so this test proves less", n.readBytes, n.cache.lazy != nil)
	}
	if got := look(t, n, 10); got.String() != want.String() {
		t.Errorf("a new store:       %v\nreading the file: %v", got, want)
	}
}

// TestScanCanonicalAgreesWithParse: the scan accepts exactly the lines
// the fast parser accepts, with the same fields but the content.
func TestScanCanonicalAgreesWithParse(t *testing.T) {
	lines := canonicalSeeds(t)
	for _, c := range []string{"", "a\"b", `\`, "é\n", "x\u2028"} {
		for _, key := range []string{"", "k", "k\"q", "slack:C1"} {
			lines = append(lines, string(appendEntryJSON(nil, Entry{Cursor: 3, Timestamp: "t", Content: c, SessionKey: key})))
		}
	}
	lines = append(lines, `{"cursor": 1, "timestamp": "t", "content": "bad \x01"}`, "{\"cursor\": 1, \"timestamp\": \"t\", \"content\": \"\xff\"}",
		`{"cursor": 1, "timestamp": "t", "content": "bad \q"}`, `{"cursor": 1, "timestamp": "t", "content": "open`)
	for _, line := range lines {
		checkScan(t, line)
	}
}

// FuzzScanCanonical: the scan and the fast parser agree on every line.
func FuzzScanCanonical(f *testing.F) {
	for _, s := range canonicalSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(checkScan)
}

func checkScan(t *testing.T, line string) {
	want, wok := parseCanonical([]byte(line))
	keys := newKeyTable()
	got, gok := scanCanonical([]byte(line), keys, newScopeTable())
	want.Content = ""
	if gok != wok || got != want {
		t.Errorf("%q: scan %+v, %v; parse %+v, %v", line, got, gok, want, wok)
	}
	if id, ok := keys.ids[got.SessionKey]; gok && got.SessionKey != "" && !bytes.Contains([]byte(line), []byte(`\`)) &&
		(!ok || keys.names[id] != got.SessionKey) {
		t.Errorf("%q: key %q not interned", line, got.SessionKey)
	}
}

// TestReadBackIsBounded: contents read back are kept for the next turn
// only up to memoBudget; reading the whole backlog does not bring it all
// into memory.
func TestReadBackIsBounded(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	big := strings.Repeat("x", memoBudget/32)
	for range 40 {
		if _, err := s.Append(big, "a"); err != nil {
			t.Fatal(err)
		}
	}
	all, err := openTestStore(t, dir, nil).Since(0, 0)
	if err != nil || len(all) != 40 || all[39].Content != big {
		t.Fatalf("Since(0) = %d entries, %v", len(all), err)
	}
	r := openTestStore(t, dir, nil)
	if _, err := r.Unread("a"); err != nil {
		t.Fatal(err)
	}
	if r.cache.memoBytes > memoBudget || len(r.cache.memo) >= 40 {
		t.Errorf("%d contents (%d bytes) kept after reading 40 of %d bytes", len(r.cache.memo), r.cache.memoBytes, len(big))
	}
}

// TestIndexOfAnEarlierVersionIsRebuilt: an index of version 1 (no memory
// scopes in its table, or no table at all) is not used — its table cannot
// say which scope an entry is of — and is replaced by one of this version
// by the same read, without a warning: an upgrade is not damage.
func TestIndexOfAnEarlierVersionIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	size := fillHistory(t, dir, 40, 30)
	path := filepath.Join(dir, indexFile)
	header, _, _ := strings.Cut(testkit.ReadFile(t, "", path), "\n")
	var ix indexRecord
	if err := json.Unmarshal([]byte(header), &ix); err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(struct {
		Version int    `json:"version"`
		Dev     uint64 `json:"dev,omitempty"`
		Ino     uint64 `json:"ino,omitempty"`
		Head    []byte `json:"head"`
		Mark    []byte `json:"mark"`
		Offset  int64  `json:"offset"`
		Floor   int    `json:"floor"`
		Count   int    `json:"count"`
		Max     int    `json:"max"`
	}{1, ix.Dev, ix.Ino, ix.Head[:min(headLen, ix.Offset)], ix.Mark, ix.Offset, ix.Floor, ix.Count, ix.Max})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, "", path, string(old))
	logs := &testkit.LogRecorder{}
	s := indexedStore(t, dir, slog.New(logs))
	got := look(t, s, 30)
	if want := wholeView(t, dir, 30); got.String() != want.String() {
		t.Errorf("with the old index: %v\nreading the file:  %v", got, want)
	}
	if s.readBytes != size {
		t.Errorf("scanned %d of %d bytes: the old index was used", s.readBytes, size)
	}
	if n := len(logs.Find(slog.LevelWarn, "")); n != 0 {
		t.Errorf("%d warnings about an index of an earlier version", n)
	}
	header, _, _ = strings.Cut(testkit.ReadFile(t, "", path), "\n")
	if err := json.Unmarshal([]byte(header), &ix); err != nil || ix.Version != indexVersion {
		t.Errorf("the index after the read: version %d, %v; want %d", ix.Version, err, indexVersion)
	}
	n := indexedStore(t, dir, nil)
	look(t, n, 30)
	if n.readBytes >= size {
		t.Errorf("the next store scanned %d of %d bytes: the rebuilt index was not used", n.readBytes, size)
	}
}
