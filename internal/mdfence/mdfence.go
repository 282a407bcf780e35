// Package mdfence chooses Markdown code fences for text that is not ours
// (a shared file, a memory file): a fence longer than any backtick run in
// the text, so the text cannot close it early. A leaf: it imports nothing
// of dreamgate's.
package mdfence

import "strings"

// For returns a backtick fence of at least three, longer than the longest
// run of backticks in text.
func For(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
