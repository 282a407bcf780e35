package llm

import "strings"

// Providers echo a refused key in their error body ("Incorrect API key
// provided: sk-…"), and go-openai puts the body in its error text, which
// ends up in the gateway's log. Every error a call returns is redacted: the
// configured key, and anything shaped like an OpenAI/OpenRouter key
// ("sk-" or "sk-or-…" and 8 or more key characters).

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
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := redact(msg, c.cfg.APIKey); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// redact removes key (when set) and key-shaped tokens from s.
func redact(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, redacted)
	}
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
