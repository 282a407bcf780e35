package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// An entry of a scope other than the default one ends with it; an entry of
// the default scope is written exactly as before scopes, so a single-user
// workspace's history.jsonl stays nanobot's, byte for byte.
func TestScopeEncoding(t *testing.T) {
	base := Entry{Cursor: 7, Timestamp: "2026-04-03 00:02", Content: "- Ana prefers tea", SessionKey: "slack:D1"}
	plain := string(appendEntryJSON(nil, base))
	if strings.Contains(plain, "scope") {
		t.Errorf("a default-scope entry names a scope: %s", plain)
	}
	scoped := base
	scoped.Scope = "person-slack-t1-u2"
	scoped.SetSource(Source{SessionID: "g1", From: 0, To: 4})
	got := string(appendEntryJSON(nil, scoped))
	want := `{"cursor": 7, "timestamp": "2026-04-03 00:02", "content": "- Ana prefers tea", "session_key": "slack:D1", "session_id": "g1", "range": [0, 4], "scope": "person-slack-t1-u2"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A scope that is present but not one audience.ParseScope takes makes the
// line invalid: read as the default scope, a DM's words would reach the
// operator's files.
func TestParseScope(t *testing.T) {
	const head = `{"cursor": 3, "timestamp": "t", "content": "c", "session_key": "k"`
	tests := []struct {
		tail string
		want audience.Scope
		ok   bool
	}{
		{`}`, audience.Default, true},
		{`, "scope": ""}`, audience.Default, true},
		{`, "scope": null}`, audience.Default, true},
		{`, "scope": "team-slack-t1"}`, "team-slack-t1", true},
		{`, "session_id": "g", "range": [0, 1], "scope": "shared-slack-c9"}`, "shared-slack-c9", true},
		{`, "scope": "team-slack-t1", "session_id": "g", "range": [0, 1]}`, "team-slack-t1", true},
		{`, "scope": "Team-slack-t1"}`, "", false},
		{`, "scope": "team-slack-T1"}`, "", false},
		{`, "scope": "../../etc"}`, "", false},
		{`, "scope": "scopes/team-slack-t1"}`, "", false},
		{`, "scope": "team-slack-t1\u0000"}`, "", false},
		{`, "scope": 1}`, "", false},
		{`, "scope": ["team-slack-t1"]}`, "", false},
	}
	for _, tc := range tests {
		e, kind := parseLine([]byte(head + tc.tail))
		if tc.ok != (kind == lineOK) || (tc.ok && e.Scope != tc.want) {
			t.Errorf("%s: scope %q, %v; want %q, ok %v", tc.tail, e.Scope, kind, tc.want, tc.ok)
		}
		if fast, ok := parseCanonical([]byte(head + tc.tail)); ok && (!tc.ok || fast.Scope != tc.want) {
			t.Errorf("%s: the fast parser read scope %q", tc.tail, fast.Scope)
		}
	}
}

// AppendIn and AppendFrom write the scope, and the store reads it back
// whether from its cache, from a fresh store, or through the fast or the
// slow parser; a scope no folder could have is refused and nothing is
// written.
func TestAppendInScope(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	if _, err := s.Append("- operator fact", "cli:direct"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendIn("team-slack-t1", "- team fact", "slack:C1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendFrom("person-slack-t1-u2", "- dm fact", "slack:D2", Source{SessionID: "g", From: 0, To: 2}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []audience.Scope{"../x", "team-slack-T1", "invalid", "scopes/team-slack-t1"} {
		if _, err := s.AppendIn(bad, "- leaked", "k"); !errors.Is(err, audience.ErrInvalid) {
			t.Errorf("AppendIn(%q) = %v, want audience.ErrInvalid", bad, err)
		}
		if _, err := s.AppendFrom(bad, "- leaked", "k", Source{SessionID: "g", From: 2, To: 3}); !errors.Is(err, audience.ErrInvalid) {
			t.Errorf("AppendFrom(%q) = %v, want audience.ErrInvalid", bad, err)
		}
	}
	want := map[string]audience.Scope{"- operator fact": audience.Default, "- team fact": "team-slack-t1", "- dm fact": "person-slack-t1-u2"}
	check := func(name string, st *Store) {
		t.Helper()
		got, err := st.Since(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d: %+v", name, len(got), len(want), got)
		}
		for _, e := range got {
			if w, ok := want[e.Content]; !ok || e.Scope != w {
				t.Errorf("%s: %q has scope %q, want %q", name, e.Content, e.Scope, w)
			}
		}
	}
	check("same store", s)
	check("new store", openTestStore(t, dir, nil))
	data, err := os.ReadFile(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "leaked") {
		t.Errorf("an entry with a refused scope was written:\n%s", data)
	}
}
