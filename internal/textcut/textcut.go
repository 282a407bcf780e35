// Package textcut shortens text to a limit without splitting a character
// and marks where it cut: the one cutter behind every cap in dreamgate
// (archive entries, prompt parts, tool results, diffs, platform limits).
// The callers differ only in what a Limit says: the unit, the mark, whether
// the mark must fit inside the limit, whether to end at a line.
//
// It is a leaf: it imports nothing of ours, so any layer may use it.
package textcut

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Count stands in a Mark for the number of characters left out.
const Count = "%d"

// countRoom is the room a Count is given when the mark must fit inside the
// limit: it is reserved before the count is known, and no count needs more
// (an int64 has at most 19 digits).
const countRoom = 20

// Limit says how much text may stay and how a cut shows.
type Limit struct {
	// Max is the most the text may hold, in characters (Unicode code
	// points, as nanobot and the chat platforms count them; a byte of
	// invalid UTF-8 counts as one) or, with Bytes, in bytes. Below zero
	// counts as zero.
	Max int
	// Bytes counts Max in bytes: a bound that holds for any tokenizer and
	// any encoding of the text.
	Bytes bool
	// Mark is appended after a cut, so whoever reads the text knows part
	// of it is missing. Count in it is replaced with the number of
	// characters left out.
	Mark string
	// MarkWithin makes Mark count toward Max, for a hard limit such as a
	// platform's; otherwise Max caps the text kept and Mark goes beyond
	// it. When Max cannot hold Mark (with Count's room) and one unit of
	// text besides, the text comes back whole: a mark alone would tell
	// the reader nothing, and cutting without one would hide the cut.
	MarkWithin bool
	// AtLine ends a cut just after the last line break of the text kept,
	// when that break lies in the second half of it, so that a line is
	// not left half shown for the sake of a few characters.
	AtLine bool
}

// Chars cuts s to at most max characters and appends mark when it cut; it
// reports whether it cut. It is Limit{Max: max, Mark: mark}.Cut(s).
func Chars(s string, max int, mark string) (string, bool) {
	return Limit{Max: max, Mark: mark}.Cut(s)
}

// Cut returns s when it is within the limit, and otherwise its longest
// prefix the limit allows, never ending inside a UTF-8 sequence, followed
// by the mark. It reports whether it cut.
func (l Limit) Cut(s string) (string, bool) {
	limit := max(l.Max, 0)
	if len(s) <= limit || !l.Bytes && utf8.RuneCountInString(s) <= limit {
		return s, false // len(s) counts bytes, and a string has no more characters than bytes
	}
	keep := limit
	if l.MarkWithin {
		keep -= l.markRoom()
		if keep <= 0 {
			return s, false
		}
	}
	kept := s[:l.prefix(s, keep)]
	if l.AtLine {
		if nl := strings.LastIndexByte(kept, '\n'); nl >= 0 && nl >= len(kept)/2 {
			kept = kept[:nl+1]
		}
	}
	return kept + l.mark(s[len(kept):]), true
}

// prefix returns the length in bytes of the longest prefix of s holding at
// most keep units and ending at the start of a character; s holds more
// than keep units.
func (l Limit) prefix(s string, keep int) int {
	if l.Bytes {
		end := keep
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		return end
	}
	n := 0
	for i := range s {
		if n == keep {
			return i
		}
		n++
	}
	return len(s)
}

// markRoom is the room Mark takes inside the limit, in the limit's unit.
func (l Limit) markRoom() int {
	room := len(l.Mark)
	if !l.Bytes {
		room = utf8.RuneCountInString(l.Mark)
	}
	if strings.Contains(l.Mark, Count) {
		room += countRoom
	}
	return room
}

// mark is Mark with Count replaced by the characters of dropped.
func (l Limit) mark(dropped string) string {
	if !strings.Contains(l.Mark, Count) {
		return l.Mark
	}
	return strings.ReplaceAll(l.Mark, Count, strconv.Itoa(utf8.RuneCountInString(dropped)))
}
