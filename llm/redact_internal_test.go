package llm

import "testing"

func TestRedact(t *testing.T) {
	tests := []struct{ in, key, want string }{
		{"bad key: my-own-key-123", "my-own-key-123", "bad key: [redacted]"},
		{"Incorrect API key provided: sk-SECRETKEY123.", "", "Incorrect API key provided: [redacted]."},
		{"token sk-or-v1-abcdef0123456789 refused", "", "token [redacted] refused"},
		{"a task-management1234 tool, sk-short", "", "a task-management1234 tool, sk-short"},
		{"sk-aaaaaaaa and sk-bbbbbbbb", "", "[redacted] and [redacted]"},
	}
	for _, tt := range tests {
		if got := redact(tt.in, tt.key); got != tt.want {
			t.Errorf("redact(%q, %q) = %q, want %q", tt.in, tt.key, got, tt.want)
		}
	}
}

// A URL is shown without its user info, query or fragment, whether or not
// it parses: a refused URL is the one an error shows.
func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
		{"https://user:secret@host/v1", "https://[redacted]@host/v1"},
		{"https://tokenonly@host/v1", "https://[redacted]@host/v1"},
		{"https://host/v1?key=secret&x=1", "https://host/v1?[redacted]"},
		{"https://host/v1#secret", "https://host/v1"},
		// Invalid URLs: the secret goes all the same.
		{"https://user:secret@host:bad/v1", "https://[redacted]@host:bad/v1"},
		{"https://user:se/cr?et#x@host/v1", "https://[redacted]@host/v1"},
		{"https://user:p@ss@host/v1", "https://[redacted]@host/v1"},
		{"https://user:sec ret@host/v1", "https://[redacted]@host/v1"},
		{"user:secret@host/v1", "[redacted]@host/v1"},
		{"ht tp://user:secret@host", "ht tp://[redacted]@host"},
		{"https://user:secret\x00@host", "https://[redacted]@host"},
		{"https://host/v1?%zz=secret", "https://host/v1?[redacted]"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactURLsInText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`Post "http://user:***@127.0.0.1:9/v1/chat/completions?key=secret": dial tcp 127.0.0.1:9: connect: connection refused`,
			`Post "http://[redacted]@127.0.0.1:9/v1/chat/completions?[redacted]": dial tcp 127.0.0.1:9: connect: connection refused`},
		{"see https://a:b@x/y and wss://c@z/w?t=1 then", "see https://[redacted]@x/y and wss://[redacted]@z/w?[redacted] then"},
		{"no url here: host:port user@example", "no url here: host:port user@example"},
		{"ends with ://", "ends with ://"},
	}
	for _, tt := range tests {
		if got := RedactURLs(tt.in); got != tt.want {
			t.Errorf("RedactURLs(%q) =\n %q, want\n %q", tt.in, got, tt.want)
		}
	}
}
