package history

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// Scopes of the tests' mixed histories.
const (
	teamScope   audience.Scope = "team-slack-t1"
	personScope audience.Scope = "person-slack-t1-u2"
)

// scopeOf is the scope of entry i of fillScoped's history: mostly the
// team's, every third the default scope's, every seventh the person's.
func scopeOf(i int) audience.Scope {
	switch {
	case i%7 == 0:
		return personScope
	case i%3 == 0:
		return audience.Default
	}
	return teamScope
}

// fillScoped appends n entries of the scopes scopeOf gives through a store
// that writes the index, and sets the dream cursor to dream.
func fillScoped(t *testing.T, dir string, n, dream int) {
	t.Helper()
	s := indexedStore(t, dir, nil)
	for i := 1; i <= n; i++ {
		if _, err := s.AppendIn(scopeOf(i), fmt.Sprintf("- fact %d", i), []string{"a", "b"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDreamCursor(dream); err != nil {
		t.Fatal(err)
	}
}

// scopeView is what a store shows of each scope: SinceIn from a few
// cursors, with and without a limit, and Backlogs.
func scopeView(t *testing.T, s *Store, after int, bars map[audience.Scope]int) string {
	t.Helper()
	out := ""
	for _, sc := range []audience.Scope{audience.Default, teamScope, personScope, "shared-slack-c9"} {
		for _, from := range []int{after, after + 7} {
			for _, limit := range []int{0, 3} {
				es, err := s.SinceIn(sc, from, limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if e.Scope != sc || e.Content != fmt.Sprintf("- fact %d", e.Cursor) {
						t.Errorf("SinceIn(%q) returned %+v", sc, e)
					}
				}
				out += fmt.Sprintf("%q>%d/%d %v; ", sc, from, limit, cursors(es))
			}
		}
	}
	bl, last, err := s.Backlogs(after, bars)
	if err != nil {
		t.Fatal(err)
	}
	return out + fmt.Sprintf("backlogs %+v last %d", bl, last)
}

// wantBacklogs counts by hand what Backlogs should say of fillScoped's n
// entries.
func wantBacklogs(n, after int, bars map[audience.Scope]int) []Backlog {
	var out []Backlog
	for i := 1; i <= n; i++ {
		sc := scopeOf(i)
		if i <= after || i <= bars[sc] {
			continue
		}
		j := slices.IndexFunc(out, func(b Backlog) bool { return b.Scope == sc })
		if j < 0 {
			out = append(out, Backlog{Scope: sc, First: i})
			j = len(out) - 1
		}
		out[j].Count++
	}
	return out
}

// TestReadByScope: SinceIn returns one scope's entries after a cursor, and
// Backlogs what each scope has not read, the oldest first; the same from
// the cache, from the index's table in a new process, and from the file
// when asked below the Dream cursor.
func TestReadByScope(t *testing.T) {
	const n, dream = 80, 20
	dir := t.TempDir()
	fillScoped(t, dir, n, dream)
	cases := []struct {
		after   int
		cursors map[audience.Scope]int
	}{
		{dream, nil},
		{dream, map[audience.Scope]int{teamScope: 60, audience.Default: 79}},
		{dream, map[audience.Scope]int{teamScope: n, audience.Default: n, personScope: n}},
		{5, map[audience.Scope]int{personScope: 50}}, // below the Dream cursor: the file
	}
	whole := openTestStore(t, dir, nil)
	whole.indexMin = 1 << 62
	for _, c := range cases {
		bl, last, err := whole.Backlogs(c.after, c.cursors)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantBacklogs(n, c.after, c.cursors); !slices.Equal(bl, want) || last != n {
			t.Errorf("Backlogs(%d, %v) = %+v, last %d; want %+v, last %d", c.after, c.cursors, bl, last, want, n)
		}
		want := scopeView(t, whole, c.after, c.cursors)
		lazy := indexedStore(t, dir, nil) // a new process: the index's table, not decoded
		if lazy.cache.loaded {
			t.Fatal("a new store has a cache")
		}
		if got := scopeView(t, lazy, c.after, c.cursors); got != want {
			t.Errorf("through the index:  %s\nreading the file: %s", got, want)
		}
	}
	// The index a process left holds every entry's scope.
	s := indexedStore(t, dir, nil)
	if _, err := s.Unread("a"); err != nil {
		t.Fatal(err)
	}
	if s.cache.lazy == nil || s.readBytes != 0 {
		t.Fatalf("the new store read %d bytes (lazy %v): not a start from the index's table", s.readBytes, s.cache.lazy != nil)
	}
	if got, want := scopeView(t, s, dream, nil), scopeView(t, whole, dream, nil); got != want {
		t.Errorf("after a lazy start: %s\nreading the file: %s", got, want)
	}
}

// TestBacklogsFollowAppends: an entry appended after the cache was filled
// counts for its own scope, and moves last.
func TestBacklogsFollowAppends(t *testing.T) {
	dir := t.TempDir()
	fillScoped(t, dir, 30, 30)
	s := indexedStore(t, dir, nil)
	if bl, last, err := s.Backlogs(30, nil); err != nil || len(bl) != 0 || last != 30 {
		t.Fatalf("Backlogs = %+v, %d, %v; want none, 30", bl, last, err)
	}
	other := openTestStore(t, dir, nil) // another process appends
	if _, err := other.AppendIn(personScope, "- new", "d"); err != nil {
		t.Fatal(err)
	}
	bl, last, err := s.Backlogs(30, nil)
	if want := []Backlog{{Scope: personScope, First: 31, Count: 1}}; err != nil || !slices.Equal(bl, want) || last != 31 {
		t.Errorf("Backlogs = %+v, %d, %v; want %+v, 31", bl, last, err, want)
	}
}

// TestTableRefusesABadScopeName: a table naming a scope audience.ParseScope
// refuses is not used (its entries would be read into a folder the name
// spells).
func TestTableRefusesABadScopeName(t *testing.T) {
	metas := []meta{{cursor: 5, off: 0, n: 10, key: 0, scope: 1}}
	for _, bad := range [][]string{{"", "../x"}, {"", "team-slack-T1"}, {"", "scopes/team-slack-t1"}, {string(teamScope), ""}, {"", string(teamScope), string(teamScope)}} {
		b := encodeTable([]string{"k"}, bad, metas, nil, 0)
		if _, ok := parseTable(b, 0, 10, metas[0]); ok {
			t.Errorf("a table with scopes %q was taken", bad)
		}
	}
	b := encodeTable([]string{"k"}, []string{"", string(teamScope)}, metas, nil, 0)
	pt, ok := parseTable(b, 0, 10, metas[0])
	if !ok {
		t.Fatal("a good table was refused")
	}
	all, err := pt.lazy.all()
	if err != nil || len(all) != 1 || pt.scopes.names[all[0].scope] != string(teamScope) {
		t.Errorf("decoded %+v, %v", all, err)
	}
}

// TestReadBackChecksTheScope: an entry whose line no longer has the scope
// the cache noted there (rewritten in place by another program) is not
// returned as it was: the store reads the file again.
func TestReadBackChecksTheScope(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	if _, err := s.AppendIn(teamScope, "- x", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SinceIn(teamScope, 0, 0); err != nil {
		t.Fatal(err)
	}
	s.cache.memo = nil
	path := filepath.Join(dir, historyFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Same length, same size and inode: only the read back can tell.
	swapped := []byte(string(data[:len(data)-len(`t1"}`)-1]) + `t2"}` + "\n")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(swapped, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The stat cannot tell: same size, and the old time put back.
	if err := os.Chtimes(path, s.cache.modTime, s.cache.modTime); err != nil {
		t.Fatal(err)
	}
	team, err1 := s.SinceIn(teamScope, 0, 0)
	other, err2 := s.SinceIn("team-slack-t2", 0, 0)
	if err1 != nil || err2 != nil || len(team) != 0 || len(other) != 1 {
		t.Errorf("after the scope changed: team %v (%v), team-slack-t2 %v (%v)", cursors(team), err1, cursors(other), err2)
	}
}

// TestBacklogsOfOneScope: a history of the default scope alone is counted
// by search, from the cache and from the index's table alike.
func TestBacklogsOfOneScope(t *testing.T) {
	dir := t.TempDir()
	fillHistory(t, dir, 40, 30)
	for _, s := range []*Store{indexedStore(t, dir, nil), openTestStore(t, dir, nil)} {
		for _, c := range []struct {
			after   int
			cursors map[audience.Scope]int
			want    []Backlog
		}{
			{30, nil, []Backlog{{Scope: audience.Default, First: 31, Count: 10}}},
			{30, map[audience.Scope]int{audience.Default: 35, teamScope: 39}, []Backlog{{Scope: audience.Default, First: 36, Count: 5}}},
			{40, nil, nil},
			{10, nil, []Backlog{{Scope: audience.Default, First: 11, Count: 30}}}, // below the Dream cursor: the file
		} {
			bl, last, err := s.Backlogs(c.after, c.cursors)
			if err != nil || !slices.Equal(bl, c.want) || last != 40 {
				t.Errorf("Backlogs(%d, %v) = %+v, %d, %v; want %+v, 40", c.after, c.cursors, bl, last, err, c.want)
			}
		}
	}
}

// Entries finds listed cursors wherever they are — below the Dream cursor
// (read from the file) and above it (from the cache) — in file order, and
// leaves out a cursor no entry has.
func TestEntriesByCursor(t *testing.T) {
	s := openTestStore(t, t.TempDir(), nil)
	for i := range 10 {
		scope := audience.Default
		if i%2 == 1 {
			scope = "team-slack-t1"
		}
		if _, err := s.AppendIn(scope, fmt.Sprintf("- fact %d", i+1), fmt.Sprintf("slack:c%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDreamCursor(6); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries(9, 2, 42, 6)
	if err != nil {
		t.Fatal(err)
	}
	if c := cursors(got); !slices.Equal(c, []int{2, 6, 9}) {
		t.Fatalf("cursors %v, want [2 6 9]", c)
	}
	if got[0].SessionKey != "slack:c2" || got[0].Scope != "team-slack-t1" || got[2].Content != "- fact 9" {
		t.Errorf("entries %+v", got)
	}
	if got, err := s.Entries(); err != nil || got != nil {
		t.Errorf("no cursors: %v, %v", got, err)
	}
}

// Below the Dream cursor, Entries skips a line of the usual shape on its
// cursor alone and parses any other: an entry written with its keys in
// another order, or naming its cursor twice (the last counts, as
// encoding/json reads it), is found as a full parse finds it.
func TestEntriesBelowTheDreamCursorReadOddLines(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	for i := range 4 {
		if _, err := s.Append(fmt.Sprintf("- fact %d", i+1), "terminal:x"); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "history.jsonl"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"timestamp": "2026-11-27 10:00", "cursor": 5, "content": "- odd order"}`,
		`{"cursor": 6, "cursor": 7, "timestamp": "2026-11-27 10:00", "content": "- twice"}`,
		`{"cursor": 8, "timestamp": "2026-11-27 10:00", "content": "- usual, \"cursor\" in the text"}`,
	} {
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir, nil)
	if err := s.SetDreamCursor(8); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries(2, 5, 7, 8)
	if err != nil {
		t.Fatal(err)
	}
	if c := cursors(got); !slices.Equal(c, []int{2, 5, 7, 8}) {
		t.Fatalf("cursors %v, want [2 5 7 8]", c)
	}
	if got[1].Content != "- odd order" || got[2].Content != "- twice" {
		t.Errorf("entries %+v", got)
	}
}
