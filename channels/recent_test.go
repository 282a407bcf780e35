package channels

import (
	"strconv"
	"testing"
	"time"
)

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

func TestTTLCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewTTLCache[string](8, func() time.Time { return now })
	c.Put("C1", "private", time.Minute)
	if v, ok := c.Get("C1"); !ok || v != "private" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	now = now.Add(time.Minute - time.Nanosecond)
	if _, ok := c.Get("C1"); !ok {
		t.Fatal("expired before its time")
	}
	now = now.Add(time.Nanosecond)
	if v, ok := c.Get("C1"); ok {
		t.Fatalf("still there after its time: %q", v)
	}
	c.Put("C1", "team", time.Minute)
	c.Delete("C1")
	if _, ok := c.Get("C1"); ok {
		t.Fatal("deleted, still there")
	}

	// Full of live entries: room is made, and the newest is kept.
	for i := range 100 {
		c.Put(strconv.Itoa(i), "x", time.Hour)
		if n := c.Len(); n > 8 {
			t.Fatalf("%d entries, bound 8", n)
		}
		if _, ok := c.Get(strconv.Itoa(i)); !ok {
			t.Fatalf("entry %d lost at once", i)
		}
	}
	// Expired entries go first.
	now = now.Add(2 * time.Hour)
	c.Put("late", "y", time.Hour)
	if n := c.Len(); n != 1 {
		t.Errorf("%d entries after the others expired, want 1", n)
	}
}
