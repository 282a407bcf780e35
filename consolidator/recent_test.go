package consolidator

import (
	"fmt"
	"strings"
	"testing"
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
