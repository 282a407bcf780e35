package llm

import "strings"

// Providers echo a refused key in their error body ("Incorrect API key
// provided: sk-…"), and go-openai puts the body in its error text, which
// ends up in the gateway's log. Every error a call returns is redacted: the
// configured key, anything shaped like an OpenAI/OpenRouter key ("sk-" or
// "sk-or-…" and 8 or more key characters), and the user info and query of
// every URL in it (net/http's errors quote the request URL, whose user
// name, password or query may be the credential).

const redacted = "[redacted]"

// redactedError shows its text without secrets and still unwraps to the
// error it stands for, so errors.Is/As keep working.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err with secrets taken out of its text (err itself
// when it holds none).
func (c *Client) redactErr(err error) error {
	return RedactError(err, c.cfg.APIKey)
}

// RedactError returns err with the secrets taken out of its text: key
// (when set), key-shaped tokens and the user info and query of every URL.
// It is err itself when its text holds none; otherwise an error that still
// unwraps to err, so errors.Is and errors.As keep working.
func RedactError(err error, key string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := redact(msg, key); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// redact removes key (when set), key-shaped tokens and the credentials of
// URLs from s.
func redact(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, redacted)
	}
	s = RedactURLs(s)
	if !strings.Contains(s, "sk-") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "sk-")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		n := 0
		for i+3+n < len(s) && isKeyChar(s[i+3+n]) {
			n++
		}
		// "task-…" is a word, not a key: a key starts on its own.
		if n >= 8 && (i == 0 || !isKeyChar(s[i-1])) {
			b.WriteString(s[:i])
			b.WriteString(redacted)
		} else {
			b.WriteString(s[:i+3+n])
		}
		s = s[i+3+n:]
	}
}

func isKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// RedactURL returns raw, a URL that may not even parse (it is shown when it
// is refused), fit to be shown: user info becomes "[redacted]@", a query
// "?[redacted]", and a fragment is dropped. It works on the text, not on
// what net/url makes of it, because a URL that does not parse is the one
// an error shows: everything up to the last "@" after the scheme is taken
// for user info (a password may hold "/", "?" or "#"), which hides too
// much of a URL with "@" in its path rather than too little of one with a
// password.
func RedactURL(raw string) string {
	scheme, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		scheme, rest = scheme+redacted+"@", rest[at+1:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest = rest[:i+1] + redacted
	}
	return scheme + rest
}

// RedactURLs applies RedactURL to every URL ("scheme://…" up to a space,
// a quote or an angle bracket) in s, such as the one net/http quotes in its
// errors.
func RedactURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeChar(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(RedactURL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// isURLEnd: what ends a URL quoted in a message. A backslash ends it too:
// %q escapes a quote inside the quoted URL as \".
func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == '\\' || c == 0x7f
}
