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
