package recall

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Limits of a query: a person's or a model's question is a handful of
// words; a pasted page is not a question, and its words beyond these are
// dropped.
const (
	maxTerms    = 6
	maxTermLen  = 64 // bytes
	maxQueryLen = 4096
)

// Terms splits a query into the words it searches for: runs of letters
// and digits, lowercased, each once, in order. Everything else separates
// words, so no character of the query reaches the index's query language
// as syntax: quotes, colons (a column filter), parentheses, '*', '^', '+',
// '-' and the operators' words in capitals are words or nothing.
// Very common words (stopwords) are dropped while others remain, and at
// most maxTerms words are kept.
func Terms(query string) []string {
	if len(query) > maxQueryLen {
		query = query[:maxQueryLen]
	}
	var all []string
	seen := map[string]bool{}
	for _, w := range words(query) {
		if len(w) > maxTermLen {
			w = cutBytes(w, maxTermLen)
		}
		if !seen[w] {
			seen[w] = true
			all = append(all, w)
		}
	}
	kept := make([]string, 0, len(all))
	for _, w := range all {
		if !stopwords()[w] {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		kept = all
	}
	if len(kept) > maxTerms {
		kept = kept[:maxTerms]
	}
	return kept
}

// words returns the lowercased runs of letters and digits of s.
func words(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
	return out
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// cutBytes cuts s to at most n bytes, never inside a character.
func cutBytes(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// matchTerm is a term as the index's query language takes it: a quoted
// string. A term holds only letters and digits (Terms), so the quotes
// cannot be closed from inside it; the doubling is for safety's sake.
func matchTerm(t string) string {
	return `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
}

// matchAll is the query that every term must match.
func matchAll(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = matchTerm(t)
	}
	return strings.Join(parts, " AND ")
}

// stopwords are English words too common to find anything by; a query
// made of them alone still searches for them. Built on first use: nothing
// of this package costs a start-up.
var stopwords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by did do does for from had has have he her his
		how i if in into is it its me my no not of on or our she so that the their them then there these they
		this to too us was we were what when where which who why will with you your about said say tell told
		remember recall know`) {
		m[w] = true
	}
	return m
})
