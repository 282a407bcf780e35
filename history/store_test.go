package history

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

const fixtureKey = "slack:C1:1712.55"

func TestEncodingMatchesPython(t *testing.T) {
	golden := testkit.ReadFile(t, "testdata", "python-json.golden")
	entries := []Entry{
		{Cursor: 42, Timestamp: "2026-04-03 00:02", Content: "- User prefers dark mode", SessionKey: fixtureKey},
		{Cursor: 43, Timestamp: "2026-04-03 00:02", Content: "tab\there \"q\" back\\slash\nnl é ☕ \u2028 \x01 \x7f </script> \b\f\r"},
	}
	var got []byte
	for _, e := range entries {
		got = append(appendEntryJSON(got, e), '\n')
	}
	if string(got) != golden {
		t.Errorf("encoding differs from Python's json.dumps(ensure_ascii=False)\n got: %q\nwant: %q", got, golden)
	}
	for i, line := range strings.Split(strings.TrimSpace(golden), "\n") {
		e, kind := parseLine([]byte(line))
		if kind != lineOK || e != entries[i] {
			t.Errorf("line %d parsed as %+v (%v), want %+v", i, e, kind, entries[i])
		}
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want lineKind
	}{
		{"valid", `{"cursor": 1, "timestamp": "t", "content": "c"}`, lineOK},
		{"valid with key and extras", `{"cursor": 0, "timestamp": "t", "content": "c", "session_key": "k", "x": [1]}`, lineOK},
		{"null session key", `{"cursor": 1, "timestamp": "t", "content": "c", "session_key": null}`, lineOK},
		{"blank", "   ", lineBlank},
		{"not json", `{"cursor": 1, "timest`, lineBadJSON},
		{"garbage", `hello`, lineBadJSON},
		{"null", `null`, lineNotObject},
		{"list", `[1, 2]`, lineNotObject},
		{"true", `true`, lineNotObject},
		{"missing cursor", `{"timestamp": "t", "content": "c"}`, lineBadCursor},
		{"null cursor", `{"cursor": null, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"bool cursor", `{"cursor": true, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"negative cursor", `{"cursor": -3, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"float cursor", `{"cursor": 1.0, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"exponent cursor", `{"cursor": 1e3, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"string cursor", `{"cursor": "4", "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"huge cursor", `{"cursor": 99999999999999999999999, "timestamp": "t", "content": "c"}`, lineBadCursor},
		{"numeric timestamp", `{"cursor": 1, "timestamp": 5, "content": "c"}`, lineBadFields},
		{"missing content", `{"cursor": 1, "timestamp": "t"}`, lineBadFields},
		{"list content", `{"cursor": 1, "timestamp": "t", "content": ["c"]}`, lineBadFields},
		{"numeric session key", `{"cursor": 1, "timestamp": "t", "content": "c", "session_key": 7}`, lineBadFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := parseLine([]byte(tt.line)); got != tt.want {
				t.Errorf("parseLine(%q) = %v, want %v", tt.line, got, tt.want)
			}
		})
	}
}

func TestNanobotWorkspaceLoads(t *testing.T) {
	ws := copyTree(t, filepath.Join("testdata", "nanobot-workspace"))
	rec := &testkit.LogRecorder{}
	s := openTestStore(t, filepath.Join(ws, "memory"), slog.New(rec))

	n, err := s.Len()
	if err != nil || n != 7 {
		t.Fatalf("Len = %d, %v; want 7 valid entries (one torn line and one bool cursor skipped)", n, err)
	}
	all, err := s.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cursors(all); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("Since(0) cursors = %v", got)
	}
	if all[0].SessionKey != "" || all[2].SessionKey != fixtureKey {
		t.Errorf("session keys: %q, %q", all[0].SessionKey, all[2].SessionKey)
	}
	if want := "- Correction: the staging DB is pg-staging-2 (not pg-staging-1)\n- Ana likes \"café ☕\" references"; all[2].Content != want {
		t.Errorf("content of 3 = %q", all[2].Content)
	}

	tests := []struct {
		name          string
		cursor, limit int
		want          []int
	}{
		{"after dream cursor", 3, 0, []int{4, 5, 6, 7}},
		{"limited", 3, 2, []int{4, 5}},
		{"below the cache floor", 1, 3, []int{2, 3, 4}},
		{"everything, limited", -1, 1, []int{1}},
		{"past the end", 7, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Since(tt.cursor, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cursors(got), tt.want) {
				t.Errorf("Since(%d, %d) = %v, want %v", tt.cursor, tt.limit, cursors(got), tt.want)
			}
		})
	}

	unread, err := s.Unread(fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := cursors(unread); !slices.Equal(got, []int{5, 6}) {
		t.Errorf("Unread(%s) = %v, want [5 6] (3 is already dreamed)", fixtureKey, got)
	}
	if u, _ := s.Unread("discord:42"); !slices.Equal(cursors(u), []int{4, 7}) {
		t.Errorf("Unread(discord:42) = %v", cursors(u))
	}
	if u, _ := s.Unread("terminal:nobody"); len(u) != 0 {
		t.Errorf("Unread of an unknown session = %v", cursors(u))
	}
	if dc, err := s.DreamCursor(); dc != 3 || err != nil {
		t.Errorf("DreamCursor = %d, %v", dc, err)
	}
	if lc, err := s.LastCursor(); lc != 7 || err != nil {
		t.Errorf("LastCursor = %d, %v", lc, err)
	}
	// Many reads, one warning per kind of damage.
	if got := rec.Count(slog.LevelWarn, "skipping a malformed history.jsonl line (further ones of this kind not logged)"); got != 2 {
		t.Errorf("malformed-line warnings = %d, want 2 (torn JSON, bool cursor)", got)
	}
}

func TestCursorNumberingContinues(t *testing.T) {
	tests := []struct {
		name   string
		cursor *string // content of .cursor; nil removes it
		want   int
	}{
		{"cursor file agrees", ptr("7"), 8},
		{"cursor file ahead of the file", ptr("20"), 21},
		{"cursor file behind the file", ptr("2"), 8},
		{"cursor file garbled", ptr("seven"), 8},
		{"cursor file negative", ptr("-4"), 8},
		{"no cursor file", nil, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := copyTree(t, filepath.Join("testdata", "nanobot-workspace"))
			dir := filepath.Join(ws, "memory")
			if tt.cursor == nil {
				if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil {
					t.Fatal(err)
				}
			} else {
				testkit.WriteFile(t, dir, cursorFile, *tt.cursor)
			}
			s := openTestStore(t, dir, nil)
			e, err := s.Append("- new fact", "terminal:me")
			if err != nil {
				t.Fatal(err)
			}
			if e.Cursor != tt.want {
				t.Errorf("next cursor = %d, want %d", e.Cursor, tt.want)
			}
			if got := strings.TrimSpace(testkit.ReadFile(t, dir, cursorFile)); got != fmt.Sprint(tt.want) {
				t.Errorf(".cursor = %q after the append", got)
			}
			e2, err := s.Append("- another", "terminal:me")
			if err != nil || e2.Cursor != tt.want+1 {
				t.Errorf("second append: %d, %v", e2.Cursor, err)
			}
			// A fresh Store (another process) sees both.
			got, err := openTestStore(t, dir, nil).Since(tt.want-1, 0)
			if err != nil || !slices.Equal(cursors(got), []int{tt.want, tt.want + 1}) {
				t.Errorf("fresh store Since = %v, %v", cursors(got), err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestAppendFormat(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	e, err := s.Append("- User prefers dark mode  \n\n", fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cursor": 1, "timestamp": "2026-04-03 00:02", "content": "- User prefers dark mode", "session_key": "slack:C1:1712.55"}` + "\n"
	if got := testkit.ReadFile(t, dir, historyFile); got != want {
		t.Errorf("file = %q\nwant %q", got, want)
	}
	if e.Content != "- User prefers dark mode" || e.Timestamp != "2026-04-03 00:02" {
		t.Errorf("entry = %+v", e)
	}
	if _, err := s.Append("no key", ""); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, historyFile); !strings.HasSuffix(got, `"content": "no key"}`+"\n") {
		t.Errorf("entry without a session key written as %q", got)
	}
}

func TestAppendCapsContent(t *testing.T) {
	rec := &testkit.LogRecorder{}
	s := openTestStore(t, t.TempDir(), slog.New(rec))
	long := strings.Repeat("é", MaxEntryChars+10)
	for range 2 {
		e, err := s.Append(long, "k")
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Repeat("é", MaxEntryChars) + "\n... (truncated)"; e.Content != want {
			t.Errorf("capped content has %d chars", len([]rune(e.Content)))
		}
	}
	all, _ := s.Since(0, 0)
	if len(all) != 2 || all[1].Content != all[0].Content {
		t.Errorf("stored entries differ from returned ones")
	}
	if n := rec.Count(slog.LevelWarn, "history entry over the size cap; truncating (further ones not logged)"); n != 1 {
		t.Errorf("oversize warnings = %d, want 1", n)
	}
}

func TestTornLastLine(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, dir, historyFile, `{"cursor": 1, "timestamp": "t", "content": "a"}`+"\n"+`{"cursor": 2, "timestamp": "t", "con`)
	s := openTestStore(t, dir, nil)
	got, err := s.Since(0, 0)
	if err != nil || !slices.Equal(cursors(got), []int{1}) {
		t.Fatalf("Since = %v, %v; want only the complete line", cursors(got), err)
	}
	e, err := s.Append("b", "k")
	if err != nil {
		t.Fatal(err)
	}
	if e.Cursor != 2 {
		t.Errorf("cursor after a torn line = %d, want 2 (the torn line's cursor was never valid)", e.Cursor)
	}
	got, _ = s.Since(0, 0)
	if !slices.Equal(cursors(got), []int{1, 2}) || got[1].Content != "b" {
		t.Errorf("after append: %+v", got)
	}
	lines := strings.Split(strings.TrimSuffix(testkit.ReadFile(t, dir, historyFile), "\n"), "\n")
	if len(lines) != 3 || lines[1] != `{"cursor": 2, "timestamp": "t", "con` {
		t.Errorf("the torn line must be ended, not glued to the new entry: %q", lines)
	}
	// A hand-edited file whose valid last line lacks a newline keeps that
	// entry once something is appended after it.
	testkit.WriteFile(t, dir, historyFile, `{"cursor": 5, "timestamp": "t", "content": "a"}`)
	e, err = openTestStore(t, dir, nil).Append("c", "k")
	if err != nil || e.Cursor != 6 {
		t.Errorf("append after an unterminated valid line: %d, %v", e.Cursor, err)
	}
}

func TestReadsOnlyWhatWasAppended(t *testing.T) {
	dir := t.TempDir()
	a := openTestStore(t, dir, nil)
	b := openTestStore(t, dir, nil) // stands for another process
	for i := range 3 {
		if _, err := a.Append(fmt.Sprintf("entry %d", i), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := a.Since(0, 0); len(got) != 3 {
		t.Fatalf("a sees %d entries", len(got))
	}
	// Change an already-read line in place, same length: a reader that
	// re-read the whole file would see it; one that reads only appended
	// bytes keeps its cached copy. (Not the first line: a changed start
	// means another file, read again in full; see
	// TestRewriteOfTheSameInodeIsReadAgain.)
	data := testkit.ReadFile(t, dir, historyFile)
	testkit.WriteFile(t, dir, historyFile, strings.Replace(data, "entry 1", "ENTRY 1", 1))
	if _, err := b.Append("entry 3", "k"); err != nil {
		t.Fatal(err)
	}
	got, err := a.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3].Content != "entry 3" {
		t.Fatalf("a does not see b's append: %+v", got)
	}
	if got[1].Content != "entry 1" {
		t.Errorf("the whole file was re-read (saw %q)", got[1].Content)
	}
	// A replaced file (compaction elsewhere) is read again in full.
	if err := b.SetDreamCursor(2); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Compact(2); err != nil || n != 2 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	got, _ = a.Since(0, 0)
	if !slices.Equal(cursors(got), []int{3, 4}) {
		t.Errorf("after compaction by another store: %v", cursors(got))
	}
	if n, _ := a.Len(); n != 2 {
		t.Errorf("Len after compaction = %d", n)
	}
}

// TestRewriteOfTheSameInodeIsReadAgain: a file rewritten under the inode
// the cache knows, and longer than what it had read (a compaction by
// another process after the filesystem reused a freed inode, or a hand edit
// in place), is read again in full, not from the old offset into the middle
// of a line: Dream reads its batch from this cache and moves its cursor past
// the batch, so an entry missed here would never be dreamed.
func TestRewriteOfTheSameInodeIsReadAgain(t *testing.T) {
	line := func(c int) string {
		return string(appendEntryJSON(nil, Entry{Cursor: c, Timestamp: "2026-04-03 00:02", Content: fmt.Sprint("- fact ", c), SessionKey: "k"})) + "\n"
	}
	tests := []struct {
		name string
		fill func(t *testing.T, s *Store, path string) // entries 1-3
	}{
		{"file read from disk", func(t *testing.T, _ *Store, path string) {
			testkit.WriteFile(t, filepath.Dir(path), filepath.Base(path), line(1)+line(2)+line(3))
		}},
		{"file created by Append", func(t *testing.T, s *Store, _ string) {
			for c := 1; c <= 3; c++ {
				if _, err := s.Append(fmt.Sprint("- fact ", c), "k"); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, historyFile)
			s := openTestStore(t, dir, nil)
			tt.fill(t, s, path)
			if got, err := s.Since(0, 0); err != nil || len(got) != 3 {
				t.Fatalf("Since = %v, %v", cursors(got), err)
			}
			// Entries 1-2 dropped, 4-9 added: same inode, longer than before.
			var rewritten strings.Builder
			for c := 3; c <= 9; c++ {
				rewritten.WriteString(line(c))
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(rewritten.String()); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := s.Since(0, 0)
			if err != nil || !slices.Equal(cursors(got), []int{3, 4, 5, 6, 7, 8, 9}) {
				t.Errorf("Since after the rewrite = %v, %v; want 3..9", cursors(got), err)
			}
			batch, err := s.Since(3, 20)
			if err != nil || !slices.Equal(cursors(batch), []int{4, 5, 6, 7, 8, 9}) {
				t.Errorf("a Dream batch after 3 = %v, %v; want 4..9", cursors(batch), err)
			}
		})
	}
}

func TestUnreadFollowsDreamCursor(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	for i := range 6 {
		if _, err := s.Append(fmt.Sprint(i), "k"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		dream int
		want  []int
	}{
		{0, []int{1, 2, 3, 4, 5, 6}},
		{4, []int{5, 6}},
		{6, nil},
		{2, []int{3, 4, 5, 6}}, // moved back by hand: read from the file again
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("dream cursor ", tt.dream), func(t *testing.T) {
			testkit.WriteFile(t, dir, dreamCursorFile, fmt.Sprint(tt.dream))
			got, err := s.Unread("k")
			if err != nil || !slices.Equal(cursors(got), tt.want) {
				t.Errorf("Unread = %v, %v; want %v", cursors(got), err, tt.want)
			}
		})
	}
}

func TestDreamCursor(t *testing.T) {
	rec := &testkit.LogRecorder{}
	dir := t.TempDir()
	s := openTestStore(t, dir, slog.New(rec))
	if n, err := s.DreamCursor(); n != 0 || err != nil {
		t.Errorf("missing file: %d, %v", n, err)
	}
	if err := s.SetDreamCursor(12); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, dreamCursorFile); got != "12" {
		t.Errorf(".dream_cursor = %q, want a bare integer", got)
	}
	if n, _ := s.DreamCursor(); n != 12 {
		t.Errorf("DreamCursor = %d", n)
	}
	if err := s.SetDreamCursor(-1); !errors.Is(err, ErrNegativeCursor) {
		t.Errorf("negative cursor: %v", err)
	}
	testkit.WriteFile(t, dir, dreamCursorFile, "twelve")
	for range 3 {
		if n, err := s.DreamCursor(); n != 0 || err != nil {
			t.Errorf("garbled file: %d, %v", n, err)
		}
	}
	if n := rec.Count(slog.LevelWarn, "the dream cursor file does not hold a non-negative integer; treating it as 0"); n != 1 {
		t.Errorf("garbled cursor warnings = %d, want 1", n)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

func TestCompact(t *testing.T) {
	tests := []struct {
		name        string
		entries     int
		dream       int
		max         int
		wantDropped int
		wantLeft    []int
	}{
		{"under the limit", 5, 5, 10, 0, []int{1, 2, 3, 4, 5}},
		{"drops consumed down to the limit", 10, 8, 5, 5, []int{6, 7, 8, 9, 10}},
		{"never drops unread entries", 10, 6, 3, 6, []int{7, 8, 9, 10}},
		{"nothing consumed", 10, 0, 3, 0, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"all consumed, keeps the newest", 10, 10, 1, 9, []int{10}},
		{"limit 0 means no limit", 10, 10, 0, 0, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestStore(t, dir, nil)
			for i := range tt.entries {
				if _, err := s.Append(fmt.Sprint("entry ", i+1), "k"); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.SetDreamCursor(tt.dream); err != nil {
				t.Fatal(err)
			}
			dropped, err := s.Compact(tt.max)
			if err != nil || dropped != tt.wantDropped {
				t.Fatalf("Compact(%d) = %d, %v; want %d", tt.max, dropped, err, tt.wantDropped)
			}
			got, _ := s.Since(-1, 0)
			if !slices.Equal(cursors(got), tt.wantLeft) {
				t.Errorf("left %v, want %v", cursors(got), tt.wantLeft)
			}
			// Numbering continues past every dropped cursor, even without
			// .cursor.
			if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil {
				t.Fatal(err)
			}
			e, err := s.Append("next", "k")
			if err != nil || e.Cursor != tt.entries+1 {
				t.Errorf("next cursor = %d, %v; want %d", e.Cursor, err, tt.entries+1)
			}
			if left := tempFiles(t, dir); len(left) != 0 {
				t.Errorf("temp files left behind: %v", left)
			}
		})
	}
}

// TestCompactAtScale: the default limit (1000) on a history above it, as
// Dream compacts after a run (issue 4): no unread entry is ever dropped.
func TestCompactAtScale(t *testing.T) {
	tests := []struct {
		name        string
		dream       int
		wantDropped int
	}{
		{"half unread", 600, 200},
		{"most unread", 100, 100},
		{"all unread", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var buf []byte
			for c := 1; c <= 1200; c++ {
				buf = append(appendEntryJSON(buf, Entry{Cursor: c, Timestamp: "2026-04-03 00:02", Content: fmt.Sprint("- fact ", c), SessionKey: "k"}), '\n')
			}
			testkit.WriteFile(t, dir, historyFile, string(buf))
			testkit.WriteFile(t, dir, dreamCursorFile, fmt.Sprint(tt.dream))
			s := openTestStore(t, dir, nil)
			dropped, err := s.Compact(1000)
			if err != nil || dropped != tt.wantDropped {
				t.Fatalf("Compact(1000) = %d, %v; want %d", dropped, err, tt.wantDropped)
			}
			got, err := s.Since(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1200-tt.wantDropped || got[0].Cursor != tt.wantDropped+1 || got[len(got)-1].Cursor != 1200 {
				t.Fatalf("left %d entries, %d..%d", len(got), got[0].Cursor, got[len(got)-1].Cursor)
			}
			unread, err := s.Unread("k")
			if err != nil || len(unread) != 1200-tt.dream {
				t.Errorf("unread after compaction = %d, %v; want all %d", len(unread), err, 1200-tt.dream)
			}
		})
	}
}

func TestCompactKeepsCursorFileAhead(t *testing.T) {
	// Entries out of order (hand edits): the highest cursor is dropped with
	// the oldest lines, and only the .cursor written before the rewrite
	// keeps numbering above it.
	dir := t.TempDir()
	var b strings.Builder
	for _, c := range []int{50, 2, 3, 4} {
		fmt.Fprintf(&b, `{"cursor": %d, "timestamp": "t", "content": "x"}`+"\n", c)
	}
	testkit.WriteFile(t, dir, historyFile, b.String())
	testkit.WriteFile(t, dir, dreamCursorFile, "50")
	s := openTestStore(t, dir, nil)
	if n, err := s.Compact(2); err != nil || n != 2 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	e, err := s.Append("y", "k")
	if err != nil || e.Cursor != 51 {
		t.Errorf("cursor after compaction = %d, %v; want 51", e.Cursor, err)
	}
}

func TestConcurrentAppendsTwoStores(t *testing.T) {
	dir := t.TempDir()
	stores := []*Store{openTestStore(t, dir, nil), openTestStore(t, dir, nil)}
	const perWorker = 25
	var wg sync.WaitGroup
	errs := make(chan error, 8*perWorker)
	for w := range 8 {
		wg.Go(func() {
			s := stores[w%2]
			for i := range perWorker {
				if _, err := s.Append(fmt.Sprintf("w%d-%d", w, i), "k"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := openTestStore(t, dir, nil).Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 8*perWorker {
		t.Fatalf("%d entries, want %d", len(all), 8*perWorker)
	}
	for i, e := range all {
		if e.Cursor != i+1 {
			t.Fatalf("entry %d has cursor %d: cursors must be 1..n in file order", i, e.Cursor)
		}
	}
}

func TestLegacyMigration(t *testing.T) {
	ws := copyTree(t, filepath.Join("testdata", "legacy-workspace"))
	dir := filepath.Join(ws, "memory")
	mtime := time.Date(2026, 2, 5, 8, 15, 0, 0, time.Local)
	if err := os.Chtimes(filepath.Join(dir, legacyFile), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, dir, nil)
	got, err := s.Since(-1, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Cursor: 1, Timestamp: "2026-02-01 10:00", Content: "User asked about the deploy process; we settled on blue-green deploys."},
		{Cursor: 2, Timestamp: "2026-02-02 14:30", Content: "[RAW] 2 messages\n[2026-02-02 14:29] USER: what's the db host?\n[2026-02-02 14:30] ASSISTANT [tools: read_file]: pg-1.internal"},
		{Cursor: 3, Timestamp: "2026-02-03 09:00", Content: "User prefers tabs over spaces.\nA second line of the same entry."},
		{Cursor: 4, Timestamp: "2026-02-05 08:15", Content: "[2026-02-04] Day-only entry keeps its bracket."},
		{Cursor: 5, Timestamp: "2026-02-05 08:15", Content: "Another paragraph without a date."},
	}
	if !slices.Equal(got, want) {
		t.Errorf("migrated entries:\n got %+v\nwant %+v", got, want)
	}
	for _, f := range []string{cursorFile, dreamCursorFile} {
		if c := testkit.ReadFile(t, dir, f); c != "5" {
			t.Errorf("%s = %q, want 5", f, c)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, legacyFile)); !os.IsNotExist(err) {
		t.Errorf("HISTORY.md still there: %v", err)
	}
	if testkit.ReadFile(t, dir, legacyFile+".bak") == "" {
		t.Error("HISTORY.md.bak is empty")
	}
	if u, _ := s.Unread(""); len(u) != 0 {
		t.Errorf("migrated entries must count as dreamed; Unread = %v", cursors(u))
	}
	if e, err := s.Append("new", "k"); err != nil || e.Cursor != 6 {
		t.Errorf("first new cursor = %d, %v", e.Cursor, err)
	}

	// A second legacy file next to a non-empty history.jsonl is left alone.
	testkit.WriteFile(t, dir, legacyFile, "[2026-01-01 00:00] old\n")
	openTestStore(t, dir, nil)
	if _, err := os.Stat(filepath.Join(dir, legacyFile)); err != nil {
		t.Errorf("HISTORY.md beside a non-empty history.jsonl must stay: %v", err)
	}
	// With history.jsonl empty it migrates, and the backup name moves on.
	testkit.WriteFile(t, dir, historyFile, "")
	openTestStore(t, dir, nil)
	if _, err := os.Stat(filepath.Join(dir, legacyFile+".bak.2")); err != nil {
		t.Errorf("second backup: %v", err)
	}
}

func TestLegacyMigrationInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, dir, legacyFile, "[2026-01-01 00:00] caf\xe9 ok\n")
	s := openTestStore(t, dir, nil)
	got, err := s.Since(-1, 0)
	if err != nil || len(got) != 1 || got[0].Content != "caf\uFFFD ok" {
		t.Errorf("got %+v, %v", got, err)
	}
}
