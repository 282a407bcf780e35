package main

import (
	"log/slog"
	"testing"
)

// The switch takes a known point and an optional positive count; anything
// else leaves it off. (Hitting the point would kill this test process: the
// end-to-end and chaos tests do that through the binary.)
func TestKillHookParsing(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		value string
		on    bool
	}{
		{"", false},
		{"history-append", true},
		{"session-meta,3", true},
		{"dream-commit,1", true},
		{"no-such-point", false},
		{"session-append,0", false},
		{"session-append,x", false},
	} {
		hook := killHook(func(string) string { return tc.value }, logger)
		if (hook != nil) != tc.on {
			t.Errorf("%q: switch on %v, want %v", tc.value, hook != nil, tc.on)
		}
		if hook != nil {
			hook("some-other-point") // other points never kill
		}
	}
	if killHook(nil, logger) != nil {
		t.Error("no environment, yet the switch is on")
	}
}
