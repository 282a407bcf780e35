package tokens

import (
	"strings"
	"sync"
	"testing"
)

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

// One Counter serves a process's goroutines: counts made at once are the
// counts made one by one.
func TestCountConcurrently(t *testing.T) {
	texts := []string{"Ana prefers dark mode.", strings.Repeat("héllo wörld 123 ", 50), "\xff\xfe  \n\n x", strings.Repeat("=", 200)}
	var one Counter
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = one.Count(s)
	}
	var c Counter
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(texts)
				if got := c.Count(texts[k]); got != want[k] {
					t.Errorf("Count(%q) = %d at once, %d alone", texts[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}
