package testkit

import "strings"

// FencesBalanced reports whether every ``` code fence in s is closed: a
// message split into parts must not leave a part inside a code block.
func FencesBalanced(s string) bool {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			n++
		}
	}
	return n%2 == 0
}
