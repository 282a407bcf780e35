package dream

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dream ties a memory line to the finding and the history entries it came
// from by the words they share: the model paraphrases, so exact text
// rarely matches, and the bookkeeping must not depend on the model
// repeating itself. What a correction replaces is never decided by words:
// the correction names the replaced line's id (supersede.go). A word is a
// run of letters and digits, lower-cased, of three letters or more (any
// length with a digit: "9", "v2"), not one of a few function words, a
// plural "s" dropped.

// Thresholds of the matching, as shares of words.
const (
	// sameFact: a line came from the finding it shares this much with.
	sameFact = 0.5
	// sourceCover: a history entry is a line's source when it holds this
	// share of the line's words.
	sourceCover = 0.6
	// confirmShare: a finding restates an existing line when they share
	// this much.
	confirmShare = 0.8
)

var functionWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "that": true, "this": true,
	"are": true, "was": true, "were": true, "has": true, "have": true, "had": true,
	"from": true, "his": true, "her": true, "she": true, "they": true, "them": true,
	"their": true, "its": true, "our": true, "you": true, "your": true, "about": true,
	"into": true, "will": true, "would": true, "should": true, "who": true, "what": true,
	"which": true, "when": true, "there": true, "than": true, "then": true, "also": true,
	"user": true, "users": true,
}

// wordSet is the words of s (see above).
type wordSet map[string]bool

func words(s string) wordSet {
	out := wordSet{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		digit := strings.IndexFunc(w, unicode.IsDigit) >= 0
		if (!digit && utf8.RuneCountInString(w) < 3) || functionWords[w] {
			continue
		}
		if !digit && len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out[w] = true
	}
	return out
}

func (a wordSet) common(b wordSet) int {
	if len(b) < len(a) {
		a, b = b, a
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// coveredBy is the share of a's words that b holds (0 when a has none).
func (a wordSet) coveredBy(b wordSet) float64 {
	if len(a) == 0 {
		return 0
	}
	return float64(a.common(b)) / float64(len(a))
}

// similar is the share of the larger set's words the two share.
func (a wordSet) similar(b wordSet) float64 {
	n := max(len(a), len(b))
	if n == 0 {
		return 0
	}
	return float64(a.common(b)) / float64(n)
}
