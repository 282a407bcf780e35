package memline

import (
	"reflect"
	"testing"
)

// The id, a correction's pointers and cold memory's reason are words of
// the comment like the others: read in any order, written in one, and a
// file holding them round-trips byte for byte. A word that is not ours (a
// bad id, an unknown reason) leaves the whole comment in the text, as any
// comment not ours does.
func TestIDWords(t *testing.T) {
	cases := []struct {
		in   string
		want Line
	}{
		{"- Ana's office is Canal Road. <!-- durable 2026-12-01 src:7 id:c2d9 replaces:7f3a -->",
			Line{Bullet: "-", Text: "Ana's office is Canal Road.", Priority: Durable, Date: "2026-12-01", Sources: []int{7}, ID: "c2d9", Replaces: []string{"7f3a"}}},
		{"- Ana's office is Harbour. <!-- durable 2026-10-01 src:3 id:7f3a out:2026-11-20 why:budget superseded-by:c2d9 -->",
			Line{Bullet: "-", Text: "Ana's office is Harbour.", Priority: Durable, Date: "2026-10-01", Sources: []int{3}, ID: "7f3a", Out: "2026-11-20", Why: Budget, SupersededBy: "c2d9"}},
		{"- Hand-written. <!-- id:0a1b -->", Line{Bullet: "-", Text: "Hand-written.", ID: "0a1b"}},
		{"- merged <!-- superseded-by:0a1b why:merged id:9999 -->", Line{Bullet: "-", Text: "merged", ID: "9999", Why: Merged, SupersededBy: "0a1b"}},
		{"- odd <!-- id:7F3A -->", Line{Bullet: "-", Text: "odd <!-- id:7F3A -->"}},
		{"- odd <!-- id:abc -->", Line{Bullet: "-", Text: "odd <!-- id:abc -->"}},
		{"- odd <!-- why:forgotten -->", Line{Bullet: "-", Text: "odd <!-- why:forgotten -->"}},
		{"- odd <!-- replaces: -->", Line{Bullet: "-", Text: "odd <!-- replaces: -->"}},
		{"- odd <!-- id:aaaa id:bbbb -->", Line{Bullet: "-", Text: "odd <!-- id:aaaa id:bbbb -->"}},
	}
	for _, c := range cases {
		got, ok := Parse(c.in)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, ok, c.want)
			continue
		}
		if again, _ := Parse(got.String()); !reflect.DeepEqual(again, got) {
			t.Errorf("Parse(String()) of %q = %+v", c.in, again)
		}
		if in := c.in + "\n"; string(ParseFile([]byte(in)).Bytes()) != in {
			t.Errorf("file round trip of %q", c.in)
		}
	}
	l := Line{Text: "x", Priority: Durable, Date: "2026-12-01", ID: "7f3a", Replaces: []string{"0001", "0002"}, Out: "2026-12-02", Why: Replaced, SupersededBy: "c2d9"}
	if got, want := l.String(), "- x <!-- durable 2026-12-01 id:7f3a replaces:0001,0002 out:2026-12-02 why:replaced superseded-by:c2d9 -->"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if (Line{ID: "7f3a"}).HasMeta() {
		t.Error("an id alone counts as provenance")
	}
	if !l.Superseded() || (Line{}).Superseded() {
		t.Error("Superseded")
	}
	// The prompt's form of a line leaves all of it out.
	if s, _ := l.Shown(); s != "- x (Dec 2026)" {
		t.Errorf("Shown = %q", s)
	}
}

func TestNewIDIsShortUniqueAndStable(t *testing.T) {
	taken := map[string]bool{}
	has := func(id string) bool { return taken[id] }
	a := NewID("Ana likes tea\n2026-12-01", has)
	if !IsID(a) || len(a) != minID || a != NewID("Ana likes tea\n2026-12-01", has) {
		t.Fatalf("NewID = %q", a)
	}
	taken[a] = true
	b := NewID("Ana likes tea\n2026-12-01", has)
	if b == a || !IsID(b) || len(b) != minID+1 {
		t.Errorf("a taken id gave %q after %q", b, a)
	}
	// Every prefix taken: a counter, still an id.
	all := func(string) bool { return true }
	seen := 0
	c := NewID("x", func(id string) bool { seen++; return seen < 20 && all(id) })
	if !IsID(c) {
		t.Errorf("NewID with every prefix taken = %q", c)
	}
	for _, bad := range []string{"", "abc", "ABCD", "ab-d", "0123456789abcdefg"} {
		if IsID(bad) {
			t.Errorf("IsID(%q)", bad)
		}
	}
}
