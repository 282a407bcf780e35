package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// The clock switch takes an RFC 3339 start and a positive step, and then
// moves forward by the step at every read; anything else leaves the real
// clock, with a warning.
func TestTestClockParsing(t *testing.T) {
	for _, tc := range []struct {
		value string
		on    bool
	}{
		{"", false},
		{"2026-03-02T09:00:00Z,20s", true},
		{"2026-03-02T09:00:00+01:00,1m", true},
		{"2026-03-02T09:00:00Z", false},
		{"2026-03-02T09:00:00Z,0s", false},
		{"2026-03-02T09:00:00Z,-1m", false},
		{"2026-03-02T09:00:00Z,soon", false},
		{"yesterday,1m", false},
	} {
		logs := &testkit.LogRecorder{}
		clock := testClock(func(string) string { return tc.value }, logs.Logger())
		if (clock != nil) != tc.on {
			t.Errorf("%q: switch on %v, want %v", tc.value, clock != nil, tc.on)
		}
		warned := false
		for _, r := range logs.Records() {
			warned = warned || (r.Level == slog.LevelWarn && r.Attrs["env"] == testClockEnv)
		}
		if warned != (tc.value != "") {
			t.Errorf("%q: warned %v (%+v)", tc.value, warned, logs.Records())
		}
	}
	clock := testClock(func(string) string { return "2026-03-02T09:00:00Z,20s" }, slog.New(slog.DiscardHandler))
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for i := range 4 {
		if got, want := clock(), start.Add(time.Duration(i)*20*time.Second); !got.Equal(want) {
			t.Errorf("read %d = %v, want %v", i, got, want)
		}
	}
}
