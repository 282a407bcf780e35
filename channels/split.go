package channels

import (
	"strings"
	"unicode/utf8"
)

const fenceMarker = "```"

// maxFenceLine bounds the reopening line ("```go") carried into the next
// part, so a silly info string cannot eat the room of every part.
const maxFenceLine = 24

// SplitMessage cuts text into parts of at most limit characters (runes),
// breaking at a newline, else at a space, else anywhere. A part that ends
// inside a ``` code block is closed with a fence and the next part reopens it
// with the same info string, so every part renders on its own. A limit <= 0
// means no limit.
func SplitMessage(text string, limit int) []string {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	var parts []string
	open := "" // the fence line open at the start of rest, "" outside code
	rest := text
	for rest != "" {
		prefix := ""
		if open != "" {
			prefix = open + "\n"
		}
		if utf8.RuneCountInString(prefix)+utf8.RuneCountInString(rest) <= limit {
			parts = append(parts, prefix+rest)
			break
		}
		room := limit - utf8.RuneCountInString(prefix) - 1 - len(fenceMarker)
		fences := room >= 1
		if !fences {
			// The limit is too small to carry fences: plain cuts.
			prefix, room = "", limit
		}
		var part, after string
		var cut, skip int
		for {
			cut, skip = breakPoint(rest, room)
			after = fenceAfter(open, rest[:cut])
			part = prefix + rest[:cut]
			if !fences {
				after = ""
				break
			}
			if after == "" {
				break
			}
			closing := "\n" + fenceRun(after)
			over := utf8.RuneCountInString(part) + len(closing) - limit
			if over <= 0 {
				part += closing
				break
			}
			if room-over < 1 {
				after = "" // no room to carry this fence at all
				break
			}
			// A longer fence than reserved for is open: cut shorter.
			room -= over
		}
		parts = append(parts, part)
		rest = rest[cut+skip:]
		open = after
	}
	return parts
}

// breakPoint returns the byte length of the next chunk of s that fits in room
// runes, and how many separator bytes to drop after it.
func breakPoint(s string, room int) (cut, skip int) {
	end := 0
	for i := 0; i < room && end < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	if end >= len(s) {
		return len(s), 0
	}
	window := s[:end]
	if i := strings.LastIndexByte(window, '\n'); i > 0 {
		return i, 1
	}
	if i := strings.LastIndexByte(window, ' '); i > 0 {
		return i, 1
	}
	return end, 0
}

// fenceAfter replays the fence lines of chunk starting from state open and
// returns the fence line still open at its end ("" when none). As in
// CommonMark, a fence is a run of three or more backticks indented by at
// most three spaces, and only a run at least as long as the opening one,
// with nothing after it, closes the block — so a "```" line inside a
// "````diff" block is content.
func fenceAfter(open, chunk string) string {
	for line := range strings.SplitSeq(chunk, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 {
			continue
		}
		run := fenceRun(t)
		if len(run) < len(fenceMarker) {
			continue
		}
		if open != "" {
			if len(run) >= len(fenceRun(open)) && strings.TrimSpace(t[len(run):]) == "" {
				open = ""
			}
			continue
		}
		t = strings.TrimSpace(t)
		if len(t) > maxFenceLine {
			t = run
		}
		open = t
	}
	return open
}

// fenceRun is the run of backticks s starts with.
func fenceRun(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, "`"))]
}
