package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"status", "status", 0},
		{"stauts", "status", 2},
		{"/dream-lgo", "/dream-log", 2},
		{"enable", "enabled", 1},
		{"alowFrom", "allowFrom", 1},
		{"kitten", "sitting", 3},
		// Characters, not bytes: one accent is one edit.
		{"crön", "cron", 1},
		{"modél", "model", 1},
		{"日本", "日本語", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}
