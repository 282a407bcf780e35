package history

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
)

// parseCanonical reads a line of the shape history.jsonl's writers produce
// (nanobot's and ours): the four fields in their order, then on our archive
// entries session_id and range, then a scope other than the default one,
// strings with only the short escapes. encoding/json takes most of the
// time of reading a big history, and this takes a fraction of it. ok is
// false for any other line, which parseLine then reads; for a line it
// accepts, it returns what parseLine returns.
func parseCanonical(line []byte) (e Entry, ok bool) {
	return canonical(line, true, nil, nil)
}

// scanCanonical is parseCanonical without the content: it accepts exactly
// the lines parseCanonical accepts and returns the same entry but for an
// empty Content, checked and never copied. Opening a big unread history
// scans it this way, and reads back only the contents a caller asks for.
// keys interns the session keys and scopes the scope names, so the scan
// allocates one string per session and per scope rather than one per line.
func scanCanonical(line []byte, keys, scopes *keyTable) (Entry, bool) {
	return canonical(line, false, keys, scopes)
}

// cursorOf reads the cursor of a line that begins as every line this
// package writes does ({"cursor":N,) without parsing the rest; ok is false
// for any other line, and for one that names "cursor" again (encoding/json
// would take the last). The line may still be invalid further on.
func cursorOf(line []byte) (int, bool) {
	p := canonParser{b: line}
	if !p.byte('{') || !p.key(`"cursor"`) {
		return 0, false
	}
	c, ok := p.cursor()
	return c, ok && p.byte(',') && !bytes.Contains(p.b, []byte(`"cursor"`))
}

func canonical(line []byte, withContent bool, keys, scopes *keyTable) (e Entry, ok bool) {
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
	if withContent {
		e.Content, ok = p.str()
	} else {
		_, _, ok = p.skipStr()
	}
	if !ok {
		return Entry{}, false
	}
	more := p.byte(',')
	if more && p.key(`"session_key"`) {
		p.space()
		if bytes.HasPrefix(p.b, []byte("null")) {
			p.b = p.b[len("null"):]
		} else if e.SessionKey, ok = p.internedStr(keys); !ok {
			return Entry{}, false
		}
		more = p.byte(',')
	}
	if more && p.key(`"session_id"`) {
		if !p.source(&e) {
			return Entry{}, false
		}
		more = p.byte(',')
	}
	if more && p.key(`"scope"`) {
		if !p.scope(&e, scopes) {
			return Entry{}, false
		}
		more = false
	}
	if more || !p.byte('}') || len(p.b) != 0 {
		return Entry{}, false
	}
	return e, true
}

// source consumes the rest of an archive entry's source as appendEntryJSON
// writes it, `"session_id": "…", "range": [from, to]`, its first key
// consumed, and sets e's SessionID and Range. It accepts only a
// well-formed source (an id, 0 <= from < to): parseLine keeps the entry
// but drops a damaged one, which is left to it.
func (p *canonParser) source(e *Entry) bool {
	id, ok := p.str()
	if !ok || id == "" || !p.byte(',') || !p.key(`"range"`) || !p.byte('[') {
		return false
	}
	from, ok := p.cursor()
	if !ok || !p.byte(',') {
		return false
	}
	to, ok := p.cursor()
	if !ok || !p.byte(']') || from >= to {
		return false
	}
	e.SessionID, e.Range = id, [2]int{from, to}
	return true
}

// scope consumes a scope's value, its key consumed, and sets e's Scope. It
// accepts only a name audience.ParseScope takes, other than the default
// scope's "" (appendEntryJSON never writes that); parseLine judges the
// rest. With scopes, a name is checked once and interned there: a scan
// neither allocates nor checks it again for every line.
func (p *canonParser) scope(e *Entry, scopes *keyTable) bool {
	if scopes != nil {
		rest := p.b
		raw, escaped, ok := p.skipStr()
		if !ok {
			return false
		}
		if id, known := scopes.ids[string(raw)]; known && !escaped {
			if scopes.names[id] == "" {
				return false
			}
			e.Scope = audience.Scope(scopes.names[id])
			return true
		}
		p.b = rest
	}
	name, ok := p.str()
	if !ok || name == "" {
		return false
	}
	s, err := audience.ParseScope(name)
	if err != nil {
		return false
	}
	e.Scope = s
	if scopes != nil {
		scopes.id(name)
	}
	return true
}

// internedStr consumes a session key's string; with keys, a key without escapes
// is interned there instead of copied.
func (p *canonParser) internedStr(keys *keyTable) (string, bool) {
	if keys == nil {
		return p.str()
	}
	rest := p.b
	raw, escaped, ok := p.skipStr()
	if !ok {
		return "", false
	}
	if escaped {
		p.b = rest
		return p.str()
	}
	return keys.names[keys.idBytes(raw)], true
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

// key consumes a quoted key (exactly, no escapes) and its colon; when
// they are not next, it consumes nothing (but white space), so that the
// caller can try another key.
func (p *canonParser) key(quoted string) bool {
	p.space()
	if !bytes.HasPrefix(p.b, []byte(quoted)) {
		return false
	}
	rest := p.b
	p.b = p.b[len(quoted):]
	if !p.byte(':') {
		p.b = rest
		return false
	}
	return true
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
	var out strings.Builder // the decoded string, once an escape was seen
	q := -1                 // where the next '"' is
	for seg := 0; ; {
		if q < seg {
			if q = bytes.IndexByte(b[seg:], '"'); q < 0 {
				return "", false
			}
			q += seg
		}
		bs := bytes.IndexByte(b[seg:q], '\\')
		if bs < 0 { // b[seg:q] is the rest of the string
			raw := b[seg:q]
			if hasControl(raw) {
				return "", false
			}
			var str string
			if out.Cap() == 0 {
				str = string(raw)
			} else {
				out.Write(raw)
				str = out.String()
			}
			if !utf8.ValidString(str) {
				return "", false
			}
			p.b = b[q+1:]
			return str, true
		}
		bs += seg
		if hasControl(b[seg:bs]) {
			return "", false
		}
		if out.Cap() == 0 {
			// Up to the next quote: all of it unless a quote is escaped.
			out.Grow(max(q, bs+2))
		}
		out.Write(b[seg:bs])
		if bs+1 == len(b) {
			return "", false
		}
		switch b[bs+1] {
		case '"', '\\', '/':
			out.WriteByte(b[bs+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		default:
			return "", false
		}
		seg = bs + 2
	}
}

// skipStr consumes what str consumes and accepts exactly what it
// accepts, without building the string: it returns the bytes between the
// quotes and whether they hold an escape. Checking the raw bytes for
// UTF-8 is checking the decoded ones: a short escape stands for one ASCII
// byte, and ASCII bytes are never part of a multi-byte sequence.
func (p *canonParser) skipStr() (raw []byte, escaped, ok bool) {
	p.space()
	if len(p.b) == 0 || p.b[0] != '"' {
		return nil, false, false
	}
	b := p.b[1:]
	q := -1 // where the next '"' is
	for seg := 0; ; {
		if q < seg {
			if q = bytes.IndexByte(b[seg:], '"'); q < 0 {
				return nil, false, false
			}
			q += seg
		}
		bs := bytes.IndexByte(b[seg:q], '\\')
		if bs < 0 {
			if hasControl(b[seg:q]) || !utf8.Valid(b[:q]) {
				return nil, false, false
			}
			p.b = b[q+1:]
			return b[:q], escaped, true
		}
		bs += seg
		if hasControl(b[seg:bs]) || bs+1 == len(b) {
			return nil, false, false
		}
		switch b[bs+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		default:
			return nil, false, false
		}
		escaped = true
		seg = bs + 2
	}
}

// hasControl reports whether s holds a byte below 0x20, which JSON allows
// in a string only escaped. It looks at eight bytes at a time: a word has
// such a byte when subtracting 0x20 from each borrows into a byte whose
// top bit was clear.
func hasControl(s []byte) bool {
	for len(s) >= 8 {
		w := binary.LittleEndian.Uint64(s)
		if (w-0x2020202020202020)&^w&0x8080808080808080 != 0 {
			return true
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}
