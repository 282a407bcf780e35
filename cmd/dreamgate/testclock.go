package main

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// testClockEnv is a clock switch for benchmarks and tests only, never for
// use: DREAMGATE_TEST_CLOCK=<start>,<step> (an RFC 3339 time and a
// positive Go duration, "2026-03-02T09:00:00Z,20s") makes the gateway's
// clock start at <start> and move <step> forward at every read, so that a
// scripted conversation played in seconds crosses minutes as a person's
// would: the time in the prompt, the times the gateway stamps, its idle
// checks, the dates Dream gives memory lines. Channels still stamp the
// messages they receive with the real time, so with the switch on, idle
// archiving (which compares the two) should be off. Anything malformed is refused with a warning and leaves
// the real clock.
const testClockEnv = "DREAMGATE_TEST_CLOCK"

// testClock returns the clock the switch asks for, nil when it is off.
func testClock(getenv func(string) string, logger *slog.Logger) func() time.Time {
	if getenv == nil {
		return nil
	}
	v := getenv(testClockEnv)
	if v == "" {
		return nil
	}
	startText, stepText, _ := strings.Cut(v, ",")
	start, err := time.Parse(time.RFC3339, startText)
	if err != nil {
		logger.Warn("test clock switch ignored: the start must be an RFC 3339 time", "env", testClockEnv, "value", v)
		return nil
	}
	step, err := time.ParseDuration(stepText)
	if err != nil || step <= 0 {
		logger.Warn("test clock switch ignored: the step must be a positive duration", "env", testClockEnv, "value", v)
		return nil
	}
	logger.Warn("test clock switch on: the gateway's clock moves forward at every read", "env", testClockEnv, "start", start, "step", step)
	var reads atomic.Int64
	return func() time.Time {
		return start.Add(time.Duration(reads.Add(1)-1) * step)
	}
}
