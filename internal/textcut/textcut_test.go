package textcut

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name    string
		limit   Limit
		in      string
		want    string
		wantCut bool
	}{
		{"empty", Limit{Max: 3}, "", "", false},
		{"within the limit", Limit{Max: 5, Mark: "…"}, "abcde", "abcde", false},
		{"one over", Limit{Max: 5, Mark: "…"}, "abcdef", "abcde…", true},
		{"characters, not bytes", Limit{Max: 3, Mark: "…"}, "ééé", "ééé", false},
		{"characters cut whole", Limit{Max: 2, Mark: "…"}, "ééé", "éé…", true},
		{"emoji of four bytes", Limit{Max: 1}, "😀😀", "😀", true},
		{"zero keeps only the mark", Limit{Max: 0, Mark: "[cut]"}, "abc", "[cut]", true},
		{"negative counts as zero", Limit{Max: -4, Mark: "[cut]"}, "abc", "[cut]", true},
		{"negative, empty text", Limit{Max: -4, Mark: "[cut]"}, "", "", false},
		{"nanobot's suffix", Limit{Max: 4, Mark: "\n... (truncated)"}, "- abcdef", "- ab\n... (truncated)", true},
		{"count of characters left out", Limit{Max: 2, Mark: " (%d more)"}, "abéé", "ab (2 more)", true},
		{"count twice", Limit{Max: 1, Mark: "%d/%d"}, "abc", "a2/2", true},
		{"a percent sign is not a verb", Limit{Max: 1, Mark: " 100% of %d"}, "abc", "a 100% of 2", true},

		{"within: the mark counts", Limit{Max: 5, Mark: "…", MarkWithin: true}, "abcdef", "abcd…", true},
		{"within: exactly at the limit stays", Limit{Max: 6, Mark: "…", MarkWithin: true}, "abcdef", "abcdef", false},
		{"within: no room for the mark", Limit{Max: 1, Mark: "…", MarkWithin: true}, "abc", "abc", false},
		{"within: room for the mark and one", Limit{Max: 2, Mark: "…", MarkWithin: true}, "abc", "a…", true},
		{"within: a count reserves 20", Limit{Max: 25, Mark: "(%d)", MarkWithin: true}, strings.Repeat("x", 30), "x(29)", true},
		{"within: a count without room", Limit{Max: 24, Mark: "(%d)", MarkWithin: true}, strings.Repeat("x", 30), strings.Repeat("x", 30), false},

		{"bytes", Limit{Max: 4, Bytes: true}, "abcdef", "abcd", true},
		{"bytes: within the limit", Limit{Max: 6, Bytes: true}, "abcdef", "abcdef", false},
		{"bytes: never inside a character", Limit{Max: 3, Bytes: true}, "aéé", "aé", true},
		{"bytes: back to the start of a 4-byte character", Limit{Max: 4, Bytes: true}, "a😀", "a", true},
		{"bytes: the count is in characters", Limit{Max: 25, Bytes: true, Mark: "+%d", MarkWithin: true}, "a" + strings.Repeat("é", 13), "a+13", true},

		{"line: ends after the last break", Limit{Max: 12, AtLine: true}, "one\ntwo\nthree\n", "one\ntwo\n", true},
		{"line: a break too early is not worth half", Limit{Max: 8, AtLine: true}, "a\nbcdefghij", "a\nbcdefg", true},
		{"line: a break exactly half way counts", Limit{Max: 4, AtLine: true}, "ab\ncdef", "ab\n", true},
		{"line: no break", Limit{Max: 3, AtLine: true}, "abcdef", "abc", true},
		{"line: the mark follows the break", Limit{Max: 6, AtLine: true, Mark: "[more]"}, "abcd\nefgh", "abcd\n[more]", true},
		{"line: the count includes the dropped tail", Limit{Max: 6, AtLine: true, Mark: "+%d"}, "abcd\nefgh", "abcd\n+4", true},
		{"line: uncut text keeps its breaks", Limit{Max: 20, AtLine: true}, "a\nb\n", "a\nb\n", false},
		{"line: within a hard limit", Limit{Max: 9, AtLine: true, Mark: "…", MarkWithin: true}, "abcdef\nghijkl", "abcdef\n…", true},

		{"invalid UTF-8 counts a byte as a character", Limit{Max: 2, Mark: "…"}, "\xff\xfeabc", "\xff\xfe…", true},
		{"invalid UTF-8 within the limit", Limit{Max: 2}, "\xff\xfe", "\xff\xfe", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := tt.limit.Cut(tt.in)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("%+v.Cut(%q) = %q, %v; want %q, %v", tt.limit, tt.in, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

func TestChars(t *testing.T) {
	got, cut := Chars("héllo wörld", 5, "…")
	if got != "héllo…" || !cut {
		t.Errorf("Chars = %q, %v; want %q, true", got, cut, "héllo…")
	}
	if got, cut := Chars("héllo", 5, "…"); got != "héllo" || cut {
		t.Errorf("Chars at the limit = %q, %v; want it unchanged", got, cut)
	}
}

// FuzzCut checks the promises every caller relies on, for any text and
// limit: an uncut text comes back unchanged; a cut keeps a prefix that
// ends at the start of a character, within the limit, followed by the
// mark with its count; the prefix is as long as the limit allows.
func FuzzCut(f *testing.F) {
	f.Add("hello, world", 5, "…", false, false, false)
	f.Add("ééé\n\nabc", 3, "\n... (truncated)", false, false, true)
	f.Add("a😀b😀c", 6, "+%d", true, true, false)
	f.Add(strings.Repeat("line\n", 40), 100, "[%d more]", false, true, true)
	f.Add("\xff\xfe\xe2\x82", 1, "", true, false, false)
	f.Fuzz(func(t *testing.T, s string, maxUnits int, mark string, inBytes, within, atLine bool) {
		l := Limit{Max: maxUnits % 1000, Bytes: inBytes, Mark: mark, MarkWithin: within, AtLine: atLine}
		got, cut := l.Cut(s)
		units := func(x string) int {
			if inBytes {
				return len(x)
			}
			return utf8.RuneCountInString(x)
		}
		limit := max(l.Max, 0)
		if !cut {
			if got != s {
				t.Fatalf("%+v.Cut(%q) = %q without a cut", l, s, got)
			}
			if units(s) > limit && !(within && limit-l.markRoom() <= 0) {
				t.Fatalf("%+v.Cut(%q) left %d units over a limit of %d", l, s, units(s), limit)
			}
			return
		}
		if units(s) <= limit {
			t.Fatalf("%+v.Cut(%q) cut a text within its limit", l, s)
		}
		// Find the kept prefix: the mark with some count follows it.
		var kept string
		for i := len(got); i >= 0; i-- {
			if strings.HasPrefix(s, got[:i]) && got[i:] == strings.ReplaceAll(mark, Count, strconv.Itoa(utf8.RuneCountInString(s[i:]))) {
				kept = got[:i]
				break
			}
			if i == 0 {
				t.Fatalf("%+v.Cut(%q) = %q: not a prefix of the text followed by the mark", l, s, got)
			}
		}
		if len(kept) < len(s) && len(kept) > 0 && !utf8.RuneStart(s[len(kept)]) && utf8.ValidString(s) {
			t.Fatalf("%+v.Cut(%q) = %q splits a UTF-8 sequence", l, s, got)
		}
		if utf8.ValidString(s) && utf8.ValidString(mark) && !utf8.ValidString(got) {
			t.Fatalf("%+v.Cut(%q) = %q is not valid UTF-8", l, s, got)
		}
		room := limit
		if within {
			room -= l.markRoom()
			if units(got) > limit {
				t.Fatalf("%+v.Cut(%q) = %q holds %d units over a hard limit of %d", l, s, got, units(got), limit)
			}
		}
		if units(kept) > room {
			t.Fatalf("%+v.Cut(%q) kept %d units, room for %d", l, s, units(kept), room)
		}
		// Nothing was given away without a reason: the prefix is the
		// longest the room allows, unless it was ended at a line break
		// (then it ends with one) or at a character in the byte count.
		switch {
		case atLine && strings.HasSuffix(kept, "\n"):
		case inBytes:
			if utf8.ValidString(s) && room-len(kept) >= utf8.UTFMax {
				t.Fatalf("%+v.Cut(%q) kept %d bytes, room for %d", l, s, len(kept), room)
			}
		default:
			if units(kept) != room {
				t.Fatalf("%+v.Cut(%q) kept %d characters, room for %d", l, s, units(kept), room)
			}
		}
	})
}

// BenchmarkCut measures the cuts callers make most: a history entry under
// its cap (the common case), a 1 MB tool result cut to 128K characters at a
// line, and an archive line cut to a byte budget with a counted note.
func BenchmarkCut(b *testing.B) {
	entry := strings.Repeat("- a fact worth keeping, with ünïcödé\n", 100)
	big := strings.Repeat("a line of a large file, with ünïcödé\n", 1<<20/38)
	cases := []struct {
		name  string
		limit Limit
		text  string
	}{
		{"entry under its cap", Limit{Max: 64000, Mark: "\n... (truncated)"}, entry},
		{"1MB to 128K characters at a line", Limit{Max: 128_000, AtLine: true}, big},
		{"1MB to 8000 bytes with a count", Limit{Max: 8000, Bytes: true, Mark: "\n... (%d more)", MarkWithin: true}, big},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				c.limit.Cut(c.text)
			}
		})
	}
}
