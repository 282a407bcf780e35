package history

import (
	"bytes"
	"unicode/utf8"
)

// parseCanonical reads a line of the shape history.jsonl's writers produce
// (nanobot's and ours): the four fields in their order, strings with only
// the short escapes. encoding/json takes most of the time of reading a big
// history, and this takes a fraction of it. ok is false for any other line,
// which parseLine then reads; for a line it accepts, it returns what
// parseLine returns.
func parseCanonical(line []byte) (e Entry, ok bool) {
	p := canonParser{b: bytes.TrimSpace(line)}
	if !p.byte('{') || !p.key(`"cursor"`) {
		return Entry{}, false
	}
	if e.Cursor, ok = p.cursor(); !ok {
		return Entry{}, false
	}
	if !p.byte(',') || !p.key(`"timestamp"`) {
		return Entry{}, false
	}
	if e.Timestamp, ok = p.str(); !ok {
		return Entry{}, false
	}
	if !p.byte(',') || !p.key(`"content"`) {
		return Entry{}, false
	}
	if e.Content, ok = p.str(); !ok {
		return Entry{}, false
	}
	if p.byte(',') {
		if !p.key(`"session_key"`) {
			return Entry{}, false
		}
		p.space()
		if bytes.HasPrefix(p.b, []byte("null")) {
			p.b = p.b[len("null"):]
		} else if e.SessionKey, ok = p.str(); !ok {
			return Entry{}, false
		}
	}
	if !p.byte('}') || len(p.b) != 0 {
		return Entry{}, false
	}
	return e, true
}

// canonParser consumes b from the front.
type canonParser struct{ b []byte }

func (p *canonParser) space() {
	for len(p.b) > 0 && (p.b[0] == ' ' || p.b[0] == '\t' || p.b[0] == '\n' || p.b[0] == '\r') {
		p.b = p.b[1:]
	}
}

// byte consumes optional white space and c.
func (p *canonParser) byte(c byte) bool {
	p.space()
	if len(p.b) == 0 || p.b[0] != c {
		return false
	}
	p.b = p.b[1:]
	return true
}

// key consumes a quoted key (exactly, no escapes) and its colon.
func (p *canonParser) key(quoted string) bool {
	p.space()
	if !bytes.HasPrefix(p.b, []byte(quoted)) {
		return false
	}
	p.b = p.b[len(quoted):]
	return p.byte(':')
}

// cursor consumes a JSON integer >= 0 that fits in an int on any platform
// (up to 9 digits), with no leading zero.
func (p *canonParser) cursor() (int, bool) {
	p.space()
	n, i := 0, 0
	for ; i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9'; i++ {
		n = n*10 + int(p.b[i]-'0')
	}
	if i == 0 || i > 9 || (p.b[0] == '0' && i > 1) {
		return 0, false
	}
	p.b = p.b[i:]
	return n, true
}

// str consumes a JSON string of valid UTF-8 whose escapes are all short
// ones (\" \\ \/ \b \f \n \r \t); \u escapes are left to encoding/json.
func (p *canonParser) str() (string, bool) {
	p.space()
	if len(p.b) == 0 || p.b[0] != '"' {
		return "", false
	}
	b := p.b[1:]
	end := bytes.IndexByte(b, '"')
	if end >= 0 && bytes.IndexByte(b[:end], '\\') < 0 {
		// The common case: no escape before the closing quote.
		raw := b[:end]
		if !plain(raw) {
			return "", false
		}
		p.b = b[end+1:]
		return string(raw), true
	}
	var out []byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			p.b = b[i+1:]
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			continue
		}
		if i++; i == len(b) {
			return "", false
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default:
			return "", false
		}
	}
	return "", false
}

// plain reports whether s, a string's raw bytes, is valid UTF-8 without
// control characters (which JSON allows only escaped).
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return false
		}
	}
	return utf8.Valid(s)
}
