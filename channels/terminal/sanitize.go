package terminal

import (
	"strings"
	"unicode/utf8"
)

// visibleControls makes the control characters of text a model (or a
// provider's error) wrote harmless for a terminal: ESC would let a reply
// set the window title, write the clipboard (OSC 52), clear the screen or,
// with \r, overwrite what the person just read. Each is shown instead, as
// `cat -v` shows it (^[, ^M, ^?, M-^[ for C1); \n and \t are kept, and a
// \r ending a line is dropped. Bytes that are not UTF-8 become U+FFFD, as
// a terminal could read a lone 0x9b as a C1 control.
//
// Only text bound for a terminal goes through it: piped output keeps the
// model's exact bytes, which scripts rely on.
func visibleControls(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// CRLF: the line break alone.
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			b.WriteByte('^')
			b.WriteByte(byte(r) ^ 0x40)
		case r >= 0x80 && r <= 0x9f:
			b.WriteString("M-^")
			b.WriteByte(byte(r-0x80) ^ 0x40)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
}
