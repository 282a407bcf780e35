package history

import (
	"errors"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// An archive entry keeps nanobot's four fields first, byte for byte, and
// adds session_id and range after them as Python's json.dumps would write
// them.
func TestArchiveEntryEncodingMatchesPython(t *testing.T) {
	golden := testkit.ReadFile(t, "testdata", "archive-entry.golden")
	e := Entry{Cursor: 44, Timestamp: "2026-04-03 00:02", Content: `- Ana prefers "sencha" ☕`, SessionKey: fixtureKey}
	e.SetSource(Source{SessionID: "20260403T000230-0a1b2c3d4e5f", From: 12, To: 40})
	got := string(appendEntryJSON(nil, e)) + "\n"
	if got != golden {
		t.Errorf("encoding differs from Python's json.dumps(ensure_ascii=False)\n got: %q\nwant: %q", got, golden)
	}
	back, kind := parseLine([]byte(strings.TrimSpace(golden)))
	if kind != lineOK || back != e {
		t.Errorf("parsed as %+v (%v), want %+v", back, kind, e)
	}
	src, ok := back.Source()
	if !ok || src != (Source{SessionID: "20260403T000230-0a1b2c3d4e5f", From: 12, To: 40}) {
		t.Errorf("Source() = %+v, %v", src, ok)
	}
	// Nanobot's reader sees the same four fields.
	plain := e
	plain.SessionID, plain.Range = "", [2]int{}
	if want := string(appendEntryJSON(nil, plain)); !strings.HasPrefix(got, strings.TrimSuffix(want, "}")+", ") {
		t.Errorf("the archive entry does not start with the nanobot entry:\n%s\n%s", got, want)
	}
}

// A damaged or partial source never costs the entry: the line stays
// valid, only without its Source.
func TestParseSource(t *testing.T) {
	const head = `{"cursor": 3, "timestamp": "t", "content": "c", "session_key": "k"`
	tests := []struct {
		name string
		tail string
		want Source // zero: no source
	}{
		{"none", `}`, Source{}},
		{"both", `, "session_id": "g1", "range": [2, 7]}`, Source{SessionID: "g1", From: 2, To: 7}},
		{"compact spacing", `, "range":[0,1], "session_id":"g1"}`, Source{SessionID: "g1", From: 0, To: 1}},
		{"id without range", `, "session_id": "g1"}`, Source{}},
		{"range without id", `, "range": [2, 7]}`, Source{}},
		{"empty id", `, "session_id": "", "range": [2, 7]}`, Source{}},
		{"numeric id", `, "session_id": 4, "range": [2, 7]}`, Source{}},
		{"null id", `, "session_id": null, "range": [2, 7]}`, Source{}},
		{"empty range", `, "session_id": "g1", "range": [7, 7]}`, Source{}},
		{"backwards range", `, "session_id": "g1", "range": [7, 2]}`, Source{}},
		{"negative from", `, "session_id": "g1", "range": [-1, 2]}`, Source{}},
		{"three bounds", `, "session_id": "g1", "range": [1, 2, 3]}`, Source{}},
		{"float bound", `, "session_id": "g1", "range": [1.0, 2]}`, Source{}},
		{"string bounds", `, "session_id": "g1", "range": ["1", "2"]}`, Source{}},
		{"object range", `, "session_id": "g1", "range": {"from": 1}}`, Source{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, kind := parseLine([]byte(head + tt.tail))
			if kind != lineOK || e.Cursor != 3 || e.Content != "c" || e.SessionKey != "k" {
				t.Fatalf("parseLine = %+v, %v: the entry itself must stay valid", e, kind)
			}
			src, ok := e.Source()
			if ok != (tt.want != Source{}) || src != tt.want {
				t.Errorf("Source() = %+v, %v; want %+v", src, ok, tt.want)
			}
		})
	}
}

func TestAppendFromRefusesAnEmptySource(t *testing.T) {
	s := openTestStore(t, t.TempDir(), nil)
	for _, src := range []Source{{}, {SessionID: "g", From: 3, To: 3}, {SessionID: "g", From: -1, To: 2}, {From: 0, To: 2}} {
		if _, err := s.AppendFrom(audience.Default, "- x", "k", src); !errors.Is(err, errBadSource) {
			t.Errorf("AppendFrom(%+v) err = %v, want errBadSource", src, err)
		}
	}
	if n, _ := s.Len(); n != 0 {
		t.Errorf("%d entries written", n)
	}
}

// ArchivedAt answers for the newest range of a session generation, from
// this store's appends, from a file read afresh, from another process's
// appends and below the dream cursor.
func TestArchivedAt(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	mustFrom := func(st *Store, content, key string, src Source) Entry {
		t.Helper()
		e, err := st.AppendFrom(audience.Default, content, key, src)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mustFrom(s, "- a1", "k", Source{SessionID: "A", From: 0, To: 5})
	a2 := mustFrom(s, "- a2", "k", Source{SessionID: "A", From: 5, To: 9})
	if _, err := s.Append("- plain, no source", "k"); err != nil {
		t.Fatal(err)
	}
	b1 := mustFrom(s, "- b1", "k", Source{SessionID: "B", From: 0, To: 3}) // /new under the same key
	other := mustFrom(s, "- o1", "other", Source{SessionID: "A", From: 0, To: 4})

	check := func(t *testing.T, st *Store) {
		t.Helper()
		tests := []struct {
			key, id string
			from    int
			want    Entry // Cursor 0: not archived
		}{
			{"k", "A", 5, a2},
			{"k", "A", 0, Entry{}}, // an older range of A: recorded long ago, not the newest
			{"k", "A", 9, Entry{}}, // the messages after A's newest range
			{"k", "B", 0, b1},
			{"k", "C", 0, Entry{}},
			{"other", "A", 0, other},
			{"k", "", 0, Entry{}},
		}
		for _, tt := range tests {
			got, ok, err := st.ArchivedAt(tt.key, tt.id, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tt.want.Cursor != 0) || got != tt.want {
				t.Errorf("ArchivedAt(%q, %q, %d) = %+v, %v; want %+v", tt.key, tt.id, tt.from, got, ok, tt.want)
			}
		}
	}
	t.Run("same store", func(t *testing.T) { check(t, s) })
	t.Run("reopened", func(t *testing.T) { check(t, openTestStore(t, dir, nil)) })

	// Another process appends the next range of A: this store sees it.
	peer := openTestStore(t, dir, nil)
	a3 := mustFrom(peer, "- a3", "k", Source{SessionID: "A", From: 9, To: 12})
	if got, ok, err := s.ArchivedAt("k", "A", 9); err != nil || !ok || got != a3 {
		t.Errorf("after another store's append: %+v, %v, %v; want %+v", got, ok, err, a3)
	}

	// Dream has read everything: the entries leave the cache, not the index.
	if err := s.SetDreamCursor(a3.Cursor); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unread("k"); err != nil { // prunes the cache
		t.Fatal(err)
	}
	if got, ok, err := s.ArchivedAt("k", "A", 9); err != nil || !ok || got != a3 {
		t.Errorf("below the dream cursor: %+v, %v, %v; want %+v", got, ok, err, a3)
	}
}

// Older files, nanobot's included, carry no sources: nothing is taken as
// archived, and their entries read as before.
func TestArchivedAtOnAnOldFile(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, dir, historyFile,
		`{"cursor": 1, "timestamp": "2026-04-03 00:02", "content": "- old", "session_key": "k"}`+"\n"+
			`{"cursor": 2, "timestamp": "2026-04-03 00:03", "content": "- older style"}`+"\n")
	s := openTestStore(t, dir, nil)
	if _, ok, err := s.ArchivedAt("k", "A", 0); err != nil || ok {
		t.Errorf("ArchivedAt on an old file = %v, %v", ok, err)
	}
	all, err := s.Since(0, 0)
	if err != nil || len(all) != 2 {
		t.Fatalf("Since = %+v, %v", all, err)
	}
	if _, ok := all[0].Source(); ok {
		t.Errorf("an old entry has a source: %+v", all[0])
	}
	// A new archive entry after them is found, and the old lines stay
	// byte-identical.
	before := testkit.ReadFile(t, dir, historyFile)
	e, err := s.AppendFrom(audience.Default, "- new", "k", Source{SessionID: "A", From: 0, To: 2})
	if err != nil {
		t.Fatal(err)
	}
	after := testkit.ReadFile(t, dir, historyFile)
	if !strings.HasPrefix(after, before) {
		t.Error("appending rewrote the old lines")
	}
	if got, ok, _ := s.ArchivedAt("k", "A", 0); !ok || got != e {
		t.Errorf("ArchivedAt = %+v, %v; want %+v", got, ok, e)
	}
	if !strings.HasSuffix(after, `, "session_key": "k", "session_id": "A", "range": [0, 2]}`+"\n") {
		t.Errorf("archive entry written as %q", after[len(before):])
	}
}

// Compaction keeps the sources of the entries it keeps.
func TestCompactKeepsSources(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	var last Entry
	for i := range 6 {
		var err error
		if last, err = s.AppendFrom(audience.Default, "- fact", "k", Source{SessionID: "A", From: i * 2, To: i*2 + 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDreamCursor(last.Cursor); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Compact(2); err != nil || n != 4 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	for _, st := range []*Store{s, openTestStore(t, dir, nil)} {
		if got, ok, err := st.ArchivedAt("k", "A", 10); err != nil || !ok || got != last {
			t.Errorf("after compaction: %+v, %v, %v; want %+v", got, ok, err, last)
		}
	}
}
