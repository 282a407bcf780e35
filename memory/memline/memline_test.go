package memline

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want Line
	}{
		{"- Ana prefers dark mode. <!-- durable 2026-11-26 src:41,57 -->", true,
			Line{Bullet: "-", Text: "Ana prefers dark mode.", Priority: Durable, Date: "2026-11-26", Sources: []int{41, 57}}},
		{"  * Standup is at 9:30 <!-- 2026-01-02 ephemeral -->", true,
			Line{Indent: "  ", Bullet: "*", Text: "Standup is at 9:30", Priority: Ephemeral, Date: "2026-01-02"}},
		{"- Bob's name is Bob <!--permanent-->", true,
			Line{Bullet: "-", Text: "Bob's name is Bob", Priority: Permanent}},
		{"- written by hand", true, Line{Bullet: "-", Text: "written by hand"}},
		// A comment that is not ours stays in the text.
		{"- see the wiki <!-- TODO link -->", true, Line{Bullet: "-", Text: "see the wiki <!-- TODO link -->"}},
		{"- odd <!-- durable durable -->", true, Line{Bullet: "-", Text: "odd <!-- durable durable -->"}},
		{"- odd <!-- src:0 -->", true, Line{Bullet: "-", Text: "odd <!-- src:0 -->"}},
		{"- odd <!-- src:01 -->", true, Line{Bullet: "-", Text: "odd <!-- src:01 -->"}},
		{"- odd <!-- 2026-13-40 -->", true, Line{Bullet: "-", Text: "odd <!-- 2026-13-40 -->"}},
		{"- odd <!-- DURABLE -->", true, Line{Bullet: "-", Text: "odd <!-- DURABLE -->"}},
		// Only a comment: not a fact with metadata, a fact whose text is the comment.
		{"- <!-- durable -->", true, Line{Bullet: "-", Text: "<!-- durable -->"}},
		{"# Heading", false, Line{}},
		{"", false, Line{}},
		{"-", false, Line{}},
		{"- ", false, Line{}},
		{"-no space", false, Line{}},
		{"- - -", false, Line{}},
		{"***", false, Line{}},
		{"prose line", false, Line{}},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestStringIsCanonical(t *testing.T) {
	l := Line{Bullet: "-", Text: "Ana prefers tea.", Priority: Permanent, Date: "2026-11-26", Sources: []int{3, 9}}
	if got, want := l.String(), "- Ana prefers tea. <!-- permanent 2026-11-26 src:3,9 -->"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := (Line{Text: "no meta "}).String(); got != "- no meta " {
		t.Fatalf("String without meta = %q", got)
	}
	// A hand-written line's trailing blanks go when a comment follows.
	if got := (Line{Text: "spaced \t ", Priority: Durable}).String(); got != "- spaced <!-- durable -->" {
		t.Fatalf("String of a line that ended in blanks = %q", got)
	}
}

func TestConfirm(t *testing.T) {
	l := Line{Text: "x", Sources: []int{1, 2, 3, 4, 5, 6, 7}}
	day := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	l.Confirm(day, 7, 8, 9, 0)
	if l.Date != "2026-12-01" {
		t.Errorf("date %q", l.Date)
	}
	if want := []int{2, 3, 4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(l.Sources, want) {
		t.Errorf("sources %v, want %v", l.Sources, want)
	}
}

func TestFileRoundTrip(t *testing.T) {
	for _, in := range []string{
		"",
		"# User\n\n- Ana likes tea <!-- durable 2026-11-26 -->\n-  two spaces kept\nprose\n",
		"no trailing newline\n- fact",
		"# CRLF\r\n- a <!-- ephemeral -->\r\n",
	} {
		f := ParseFile([]byte(in))
		if got := string(f.Bytes()); got != in {
			t.Errorf("round trip of %q gave %q", in, got)
		}
	}
}

func TestSetLineRewritesOnlyThatLine(t *testing.T) {
	in := "# User\n- Ana likes tea\n-  Bob  likes coffee\n"
	f := ParseFile([]byte(in))
	facts := f.Facts()
	if len(facts) != 2 {
		t.Fatalf("facts %v", facts)
	}
	it := &f.Items[facts[0]]
	l := it.Line
	l.Priority = Permanent
	l.Confirm(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), 12)
	it.SetLine(l)
	want := "# User\n- Ana likes tea <!-- permanent 2026-11-26 src:12 -->\n-  Bob  likes coffee\n"
	if got := string(f.Bytes()); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestKey(t *testing.T) {
	if Key("Ana  likes Tea.") != Key("ana likes tea") {
		t.Fatal("keys differ")
	}
}

func TestRank(t *testing.T) {
	if !(Permanent.Rank() < Durable.Rank() && Durable.Rank() < Ephemeral.Rank() && Priority("").Rank() == Durable.Rank()) {
		t.Fatal("ranks out of order")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"- Ana prefers dark mode. <!-- durable 2026-11-26 src:41,57 -->",
		"- x <!-- src:1 -->", "* y", "  - z <!-- permanent -->", "# h", "- <!-- -->",
		"- a <!-- ephemeral 2026-02-29 -->", "-\t tab", "- a -->", "- <!--x-->-->",
		"- x <!-- durable id:7f3a replaces:0001,0002 out:2026-01-01 why:merged superseded-by:abcd -->",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\r\n") {
			return
		}
		l, ok := Parse(s)
		if !ok {
			return
		}
		// Nothing of the fact is lost: its text is in the line.
		if !strings.Contains(s, l.Text) {
			t.Fatalf("Parse(%q).Text = %q, not in the line", s, l.Text)
		}
		// The written form reads back as the same fact.
		again, ok := Parse(l.String())
		if !ok || !reflect.DeepEqual(again, l) {
			t.Fatalf("Parse(String()) of %q: %+v, %v; want %+v", s, again, ok, l)
		}
		// A file of the line round-trips.
		if got := string(ParseFile([]byte(s + "\n")).Bytes()); got != s+"\n" {
			t.Fatalf("file round trip of %q gave %q", s, got)
		}
	})
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"- Ana likes tea. <!-- durable 2026-11-26 src:4 -->":     "- Ana likes tea. (Nov 2026)",
		"  * Off on Friday. <!-- ephemeral 2026-11-26 -->":       "  * Off on Friday. (2026-11-26)",
		"- Never post on Fridays. <!-- permanent 2026-01-02 -->": "- Never post on Fridays.",
		"- Undated. <!-- durable src:3 -->":                      "- Undated.",
	} {
		l, ok := Parse(in)
		if !ok {
			t.Fatalf("Parse(%q) failed", in)
		}
		if got, dated := l.Shown(); got != want || dated != strings.Contains(want, "(") {
			t.Errorf("Shown(%q) = %q, %v; want %q", in, got, dated, want)
		}
	}
}
