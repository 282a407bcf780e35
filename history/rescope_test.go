package history

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// Rescope moves exactly the entries picked, keeping every other byte of
// their lines (a field another writer added stays), every other line as
// it was (a torn one too), and the cursors; it moves entries of the
// default scope and back, and refuses a scope that is not one.
func TestRescope(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, nil)
	const team, private = audience.Scope("team-slack-t1"), audience.Scope("private-slack-t1-c1")
	var want []Entry
	for _, a := range []struct {
		scope audience.Scope
		key   string
	}{{team, "slack:C1"}, {team, "slack:C2"}, {team, "slack:C1:1712.5"}, {audience.Default, "slack:C1"}, {private, "slack:C1"}} {
		e, err := s.AppendIn(a.scope, "- fact of "+a.key, a.key)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	// A line written by another program, with a field of its own, and a
	// torn line.
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := `{"cursor": 6, "timestamp": "2026-04-03 00:02", "content": "- odd", "session_key": "slack:C1", "scope": "team-slack-t1", "mood": "happy"}`
	if _, err := f.WriteString(extra + "\n{\"cursor\": 7, \"torn\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	inC1 := func(e Entry) bool { return e.SessionKey == "slack:C1" || strings.HasPrefix(e.SessionKey, "slack:C1:") }
	moved, err := s.Rescope(inC1, private)
	if err != nil {
		t.Fatal(err)
	}
	if got := cursors(moved); !slices.Equal(got, []int{1, 3, 4, 6}) {
		t.Errorf("moved %v, want 1, 3, 4 and 6 (5 was there already)", got)
	}
	all, err := s.Since(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	scopes := map[int]audience.Scope{}
	for _, e := range all {
		scopes[e.Cursor] = e.Scope
	}
	wantScopes := map[int]audience.Scope{1: private, 2: team, 3: private, 4: private, 5: private, 6: private}
	for c, sc := range wantScopes {
		if scopes[c] != sc {
			t.Errorf("entry %d in %q, want %q", c, scopes[c], sc)
		}
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	if !strings.Contains(text, `"scope": "private-slack-t1-c1", "mood": "happy"}`) && !strings.Contains(text, `"mood": "happy", "scope": "private-slack-t1-c1"}`) {
		t.Errorf("the other program's field was lost:\n%s", text)
	}
	if !strings.Contains(text, "{\"cursor\": 7, \"torn\n") {
		t.Errorf("the torn line was not kept:\n%s", text)
	}
	if got, _ := s.SinceIn(team, 0, 100); !slices.Equal(cursors(got), []int{2}) {
		t.Errorf("the team's entries are %v, want only 2", cursors(got))
	}

	// Back to the default scope: the field goes.
	if moved, err := s.Rescope(func(e Entry) bool { return e.Cursor == 4 }, audience.Default); err != nil || !slices.Equal(cursors(moved), []int{4}) {
		t.Fatalf("back to the default scope: %v, %v", cursors(moved), err)
	}
	if got, _ := s.Entries(4); len(got) != 1 || got[0].Scope != audience.Default || got[0].Content != want[3].Content {
		t.Errorf("entry 4 = %+v", got)
	}
	if _, err := s.Rescope(inC1, audience.Scope("../etc")); err == nil {
		t.Error("a scope that is none was taken")
	}
	if next, err := s.AppendIn(team, "- later", "slack:C9"); err != nil || next.Cursor != 7 {
		t.Errorf("the next entry after a rescope: %+v, %v", next, err)
	}
}
