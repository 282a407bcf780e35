package tokens

import "unicode/utf8"

// Bound is a bound on the cl100k tokens of s, found without the
// vocabulary: never fewer than Count(s), never more than UpperBound(s),
// and for English prose about two thirds of its bytes where UpperBound is
// all of them. The consolidator budgets with it, so that a conversation
// whose bound is within budget needs no exact count, and a one-shot chat no
// vocabulary (about 7 MB of resident memory).
//
// Why it holds. cl100k first splits a text into pieces with its pattern,
// then merges each piece's bytes pair by pair while two neighbouring parts
// together are a token; so no two neighbouring tokens of a piece make a
// token together, and tokens never straddle pieces. Two facts of the
// pattern: it never splits a run of ASCII letters, except right after an
// apostrophe's contraction ('s, 't, 're, 've, 'm, 'll, 'd); and a single
// space before a letter always opens that letter's piece. So within such a
// run (a space and letters, cut after any apostrophe's first and second
// letter), two neighbouring single-byte tokens are never a pair the
// vocabulary holds as one token (pairTokens, from the vocabulary, checked
// by a test). The most tokens a run can then be cut into is counted below;
// every other byte counts as a token of its own. Cutting more often than
// the pattern does only loosens the bound.
//
// A text that is not valid UTF-8 is counted after its invalid bytes are
// replaced by U+FFFD (three bytes each): 3 × its bytes.
func Bound(s string) int {
	if !utf8.ValidString(s) {
		return 3 * len(s)
	}
	n, start := 0, 0
	for i := 1; i <= len(s); i++ {
		if i < len(s) && joined(s, i) {
			continue
		}
		n += mostTokens(s[start:i])
		start = i
	}
	return n
}

// joined reports whether the pattern keeps s[i-1] and s[i] in one piece
// for sure: a letter after a letter or a space, unless an apostrophe's
// contraction may end between them.
func joined(s string, i int) bool {
	a, b := s[i-1], s[i]
	if !letter(b) || !letter(a) && a != ' ' {
		return false
	}
	if i >= 2 && s[i-2] == '\'' || i >= 3 && s[i-3] == '\'' {
		return false
	}
	return true
}

func letter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// mostTokens is the most tokens run (a space or a letter, then letters)
// can be merged into: as many parts as possible, no two neighbouring
// single bytes being a one-token pair. one and more are the most parts of
// the run so far whose last part is one byte, or longer.
func mostTokens(run string) int {
	if len(run) <= 1 {
		return len(run)
	}
	// Before byte i: one1, more1 for the run up to i-1; one2, more2 up to
	// i-2 (a part of two bytes ending at i-1 follows those).
	one1, more1 := 1, minInt // the first byte alone
	one2, more2 := 0, 0      // the empty run: 0 parts (taken as either)
	for i := 1; i < len(run); i++ {
		one := more1 + 1
		if !pairToken(run[i-1], run[i]) {
			one = max(one, one1+1)
		}
		more := max(one2, more2) + 1
		one2, more2, one1, more1 = one1, more1, one, more
	}
	return max(one1, more1)
}

const minInt = -1 << 31

// pairToken reports whether a then b (a space or a letter, then a letter)
// is one cl100k token.
func pairToken(a, b byte) bool {
	return pairTokens[pairIndex(a)]>>letterIndex(b)&1 == 1
}

// pairIndex numbers a space 0 and the letters A–Z, a–z 1 to 52.
func pairIndex(c byte) int {
	if c == ' ' {
		return 0
	}
	return letterIndex(c) + 1
}

// letterIndex numbers the letters A–Z, a–z 0 to 51.
func letterIndex(c byte) int {
	if c <= 'Z' {
		return int(c - 'A')
	}
	return int(c-'a') + 26
}
