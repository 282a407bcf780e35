package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// Entry is one line of history.jsonl: the archive's record type, which
// both of the store's engines share.
type Entry = store.Entry

// TimestampLayout is the history.jsonl timestamp format (minute precision).
const TimestampLayout = store.TimestampLayout

// MaxEntryChars is the hard cap Append applies to any entry (in characters,
// Unicode code points, as nanobot counts them). Writers cap their own
// entries more tightly.
const MaxEntryChars = store.MaxEntryChars

// TruncatedSuffix marks content cut to a cap (nanobot's mark): Append's
// MaxEntryChars and the archive's own, tighter caps.
const TruncatedSuffix = store.TruncatedSuffix

// lineKind classifies a history.jsonl line; every kind but lineOK and
// lineBlank is a kind of corruption warned about once per Store.
type lineKind int

const (
	lineOK lineKind = iota
	lineBlank
	lineBadJSON
	lineNotObject
	lineBadCursor
	lineBadFields
)

func (k lineKind) String() string {
	switch k {
	case lineBadJSON:
		return "not JSON"
	case lineNotObject:
		return "not a JSON object"
	case lineBadCursor:
		return "missing or invalid cursor"
	case lineBadFields:
		return "timestamp, content, session_key or scope of the wrong type"
	default:
		return "ok"
	}
}

type entryFields struct {
	Cursor     json.RawMessage `json:"cursor"`
	Timestamp  json.RawMessage `json:"timestamp"`
	Content    json.RawMessage `json:"content"`
	SessionKey json.RawMessage `json:"session_key"`
	SessionID  json.RawMessage `json:"session_id"`
	Range      json.RawMessage `json:"range"`
	Scope      json.RawMessage `json:"scope"`
}

// parseLine reads one line (without its newline). A valid entry has a
// non-negative integer cursor (not a bool, not 1.0), string timestamp and
// content, and a session_key that is absent, null or a string; other fields
// are ignored. session_id and range are read when both are well formed (a
// string and two integers, 0 <= from < to); otherwise the entry is still
// valid, only without its Source. A scope that is present must be a name
// audience.ParseScope takes (or null, or "", the default scope): a damaged
// one makes the line invalid rather than read as the default scope, which
// would carry a conversation's words into the operator's files.
func parseLine(line []byte) (Entry, lineKind) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return Entry{}, lineBlank
	}
	if line[0] != '{' {
		if json.Valid(line) {
			return Entry{}, lineNotObject
		}
		return Entry{}, lineBadJSON
	}
	var r entryFields // every field is raw, so only a syntax error can fail here
	if err := json.Unmarshal(line, &r); err != nil {
		return Entry{}, lineBadJSON
	}
	cursor, ok := parseCursor(r.Cursor)
	if !ok {
		return Entry{}, lineBadCursor
	}
	e := Entry{Cursor: cursor}
	if !jsonString(r.Timestamp, &e.Timestamp) || !jsonString(r.Content, &e.Content) {
		return Entry{}, lineBadFields
	}
	if len(r.SessionKey) > 0 && string(r.SessionKey) != "null" && !jsonString(r.SessionKey, &e.SessionKey) {
		return Entry{}, lineBadFields
	}
	if len(r.SessionID) > 0 {
		parseSource(r.SessionID, r.Range, &e)
	}
	if len(r.Scope) > 0 && string(r.Scope) != "null" {
		var name string
		if !jsonString(r.Scope, &name) {
			return Entry{}, lineBadFields
		}
		scope, err := audience.ParseScope(name)
		if err != nil {
			return Entry{}, lineBadFields
		}
		e.Scope = scope
	}
	return e, lineOK
}

// parseSource sets e's SessionID and Range from the raw fields when both
// are well formed, and leaves them unset otherwise: a damaged extension
// must not cost the entry itself.
func parseSource(rawID, rawRange json.RawMessage, e *Entry) {
	var id string
	if !jsonString(rawID, &id) || id == "" {
		return
	}
	var bounds []json.RawMessage
	if len(rawRange) == 0 || rawRange[0] != '[' || json.Unmarshal(rawRange, &bounds) != nil || len(bounds) != 2 {
		return
	}
	from, ok1 := parseCursor(bytes.TrimSpace(bounds[0]))
	to, ok2 := parseCursor(bytes.TrimSpace(bounds[1]))
	if !ok1 || !ok2 || from >= to {
		return
	}
	e.SessionID, e.Range = id, [2]int{from, to}
}

// parseCursor accepts only a JSON integer literal >= 0: Python's json reads
// 1.0 and 1e3 as floats, which nanobot rejects, and so do we.
func parseCursor(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	for _, b := range raw {
		if (b < '0' || b > '9') && b != '-' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func jsonString(raw json.RawMessage, dst *string) bool {
	if len(raw) == 0 || raw[0] != '"' {
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}

// appendEntryJSON writes e the way Python's json.dumps(ensure_ascii=False)
// does with nanobot's key order, so files stay byte-compatible:
// {"cursor": 42, "timestamp": "…", "content": "…", "session_key": "…"}
// An archive entry's source follows nanobot's fields, in the same style,
// and a scope other than the default one comes last:
// …, "session_id": "…", "range": [0, 12], "scope": "team-slack-t1"}
func appendEntryJSON(dst []byte, e Entry) []byte {
	dst = append(dst, `{"cursor": `...)
	dst = strconv.AppendInt(dst, int64(e.Cursor), 10)
	dst = append(dst, `, "timestamp": `...)
	dst = appendPyString(dst, e.Timestamp)
	dst = append(dst, `, "content": `...)
	dst = appendPyString(dst, e.Content)
	if e.SessionKey != "" {
		dst = append(dst, `, "session_key": `...)
		dst = appendPyString(dst, e.SessionKey)
	}
	if e.SessionID != "" {
		dst = append(dst, `, "session_id": `...)
		dst = appendPyString(dst, e.SessionID)
		dst = append(dst, `, "range": [`...)
		dst = strconv.AppendInt(dst, int64(e.Range[0]), 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, int64(e.Range[1]), 10)
		dst = append(dst, ']')
	}
	if e.Scope != audience.Default {
		dst = append(dst, `, "scope": `...)
		dst = appendPyString(dst, string(e.Scope))
	}
	return append(dst, '}')
}

// appendPyString quotes s as Python's json module does with
// ensure_ascii=False: only the quote, the backslash and control characters
// are escaped; everything else, U+2028 included, is written as UTF-8.
// (encoding/json differs on U+2028/U+2029 and invalid UTF-8.)
func appendPyString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
