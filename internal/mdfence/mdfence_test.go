package mdfence

import "testing"

func TestFor(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", "```"},
		{"plain", "```"},
		{"a `b` c", "```"},
		{"```go\nx\n```", "````"},
		{"`````", "``````"},
		{"`` then ```` then `", "`````"},
	}
	for _, tt := range tests {
		if got := For(tt.text); got != tt.want {
			t.Errorf("For(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
