package channels

import "testing"

func TestRecentSetIsBounded(t *testing.T) {
	s := NewRecentSet(3)
	for _, k := range []string{"a", "b", "c"} {
		if !s.Add(k) {
			t.Fatalf("add(%q) reported a duplicate", k)
		}
	}
	if s.Add("a") {
		t.Fatal("add(a) twice reported new")
	}
	s.Add("d") // evicts the oldest, "a"
	if len(s.keys) != 3 {
		t.Fatalf("set holds %d keys, want 3", len(s.keys))
	}
	if !s.Add("a") {
		t.Error("a should have been forgotten")
	}
	if s.Add("d") {
		t.Error("d should still be remembered")
	}
}
