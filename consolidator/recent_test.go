package consolidator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// TestRecentHistoryShowsTheNewest50: of a session's 60 unread entries,
// interleaved with another session's, the block shows its newest 50,
// oldest first, and none of the other session's or of those Dream read.
func TestRecentHistoryShowsTheNewest50(t *testing.T) {
	c, store := newTestConsolidator(t, newFakeModel(t), baseConfig)
	for i := 1; i <= 60; i++ {
		for _, key := range []string{"k", "other"} {
			if _, err := store.Append(fmt.Sprintf("- %s fact %d", key, i), key); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := c.recentHistory(newSession("k"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 50 || !strings.HasSuffix(lines[0], "- k fact 11") || !strings.HasSuffix(lines[49], "- k fact 60") || strings.Contains(got, "other") {
		t.Fatalf("%d lines, from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
	// Dream read up to entry 100 (k's fact 50): ten are left.
	if err := store.SetDreamCursor(100); err != nil {
		t.Fatal(err)
	}
	got, _ = c.recentHistory(newSession("k"))
	if lines = strings.Split(got, "\n"); len(lines) != 10 || !strings.HasSuffix(lines[0], "- k fact 51") {
		t.Errorf("after Dream read 100: %d lines, first %q", len(lines), lines[0])
	}
}

func TestRecentHistory(t *testing.T) {
	c, store := newTestConsolidator(t, newFakeModel(t), baseConfig)
	if got, err := c.recentHistory(newSession("k")); got != "" || err != nil {
		t.Errorf("empty store: %q, %v", got, err)
	}
	for i := range 60 {
		key := "k"
		if i%2 == 1 {
			key = "other"
		}
		if _, err := store.Append(fmt.Sprintf("- fact %d", i), key); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.SetDreamCursor(10); err != nil { // entries 1..10 dreamed
		t.Fatal(err)
	}
	got, err := c.recentHistory(newSession("k"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	// Entries of "k" have odd cursors 1..59; 11..59 are unread: 25 of them.
	if len(lines) != 25 || lines[0] != "- [2026-04-03 00:02] - fact 10" || lines[24] != "- [2026-04-03 00:02] - fact 58" {
		t.Errorf("%d lines, first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if c.counter.Loaded() {
		t.Error("a small block loaded the tokenizer")
	}

	// Many large entries: the newest that fit in 8K tokens, oldest first.
	for i := range 60 {
		if _, err := store.Append(words(fmt.Sprintf("big%d", i), 1000), "big"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = c.recentHistory(newSession("big"))
	lines = strings.Split(got, "\n")
	if n := c.counter.Count(got); n > 8000 || len(lines) != 7 || !strings.Contains(lines[6], "big59") || !strings.Contains(lines[0], "big53") {
		t.Errorf("%d tokens in %d lines (%.30q … %.30q)", n, len(lines), lines[0], lines[len(lines)-1])
	}
	// A single entry over the cap is shown cut, with a note.
	if _, err := store.Append(words("huge", 12000), "huge"); err != nil {
		t.Fatal(err)
	}
	got, _ = c.recentHistory(newSession("huge"))
	if n := c.counter.Count(got); n > 8000 || !strings.Contains(got, "\n... (entry cut here: ") {
		t.Errorf("oversized entry: %d tokens, or no cut note: %.80q", n, got[max(len(got)-120, 0):])
	}
	// The note must be true where it stands: this block is a prompt, and
	// nothing about it was sent in an archive request.
	if strings.Contains(got, "archive request") {
		t.Errorf("the Recent history cut note claims an archive request: %.120q", got[max(len(got)-120, 0):])
	}
}

// foldedAt is a Folded whose scopes have read up to the cursors given.
type foldedAt map[audience.Scope]int

func (f foldedAt) Cursor(s audience.Scope) (int, error) { return f[s], nil }

// The Recent history leaves out the entries Dream read into their own
// scope's memory, though another scope holds the frontier back.
func TestRecentHistoryFollowsEachScopesCursor(t *testing.T) {
	cfg := baseConfig
	cfg.Folded = foldedAt{"": 3}
	c, store := newTestConsolidator(t, newFakeModel(t), cfg)
	for i := range 4 {
		if _, err := store.Append(fmt.Sprintf("- fact %d", i+1), "k"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.recentHistory(newSession("k"))
	if err != nil || got != "- [2026-04-03 00:02] - fact 4" {
		t.Errorf("Recent history = %q, %v; want fact 4 alone (1-3 are in the scope's memory)", got, err)
	}
}
