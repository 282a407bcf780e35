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

func TestRecentSetForgetsOldest(t *testing.T) {
	t.Parallel()
	r := NewRecentSet(3)
	steps := []struct {
		id  string
		new bool
	}{
		{"a", true}, {"a", false}, {"b", true}, {"c", true}, {"b", false},
		{"d", true}, // evicts a
		{"a", true}, // evicts b
		{"c", false}, {"b", true},
	}
	for i, s := range steps {
		if got := r.Add(s.id); got != s.new {
			t.Fatalf("step %d add(%q) = %v, want %v", i, s.id, got, s.new)
		}
	}
	if len(r.keys) != 3 {
		t.Fatalf("set holds %d ids, want 3", len(r.keys))
	}
}
