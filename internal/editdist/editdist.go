// Package editdist is the one edit distance of dreamgate: how far a word a
// person typed is from the names it may have meant (a chat command, a
// config key), for the "did you mean …?" of an error.
//
// It is a leaf: it imports nothing of ours, so any layer may use it.
package editdist

// Distance is the Levenshtein distance between a and b in characters
// (runes, so "é" for "e" is one edit, as a person counts it): the fewest
// insertions, deletions and substitutions that turn one into the other.
// It is meant for short names; its cost is len(a)·len(b).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
