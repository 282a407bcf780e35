package tokens

import "testing"

func TestCount(t *testing.T) {
	var c Counter
	if c.Count("") != 0 || c.Loaded() {
		t.Fatal("an empty text loaded the vocabulary")
	}
	if n := c.Count("Ana prefers dark mode."); n != 5 {
		t.Errorf("Count = %d, want 5", n)
	}
	if !c.Loaded() {
		t.Error("not loaded after a count")
	}
	for _, s := range []string{"x", "héllo wörld", "- Ana prefers tea. (Nov 2026)"} {
		if n := c.Count(s); n < 1 || n > UpperBound(s) {
			t.Errorf("Count(%q) = %d, outside 1..%d", s, n, UpperBound(s))
		}
	}
}
