package dream

import (
	"strings"
	"testing"
	"time"
)

func TestFormatNothingNew(t *testing.T) {
	got := FormatNothingNew("the archive of this conversation found nothing worth keeping", 15*time.Minute)
	want := "Dream: nothing new to read: the archive of this conversation found nothing worth keeping. " +
		"Conversations reach Dream once they are archived: when one grows past its share of the context window, on /new, or after 15 minutes without a message."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := FormatNothingNew("", 0); !strings.HasPrefix(got, "Dream: nothing new to read. ") || !strings.Contains(got, "off") || strings.Contains(got, "0 minutes") {
		t.Errorf("idle archive off: %q", got)
	}
}

// Before the first Dream is different news from Dreams that changed nothing.
func TestFormatNoDreamCommits(t *testing.T) {
	now := time.Date(2026, 4, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Status
		want string
	}{
		{"never ran, no schedule", Status{}, "No Dream has run yet. Start one with /dream."},
		{"never ran, scheduled", Status{Next: now.Add(90 * time.Minute)},
			"No Dream has run yet. Start one with /dream, or wait for the scheduled one at 2026-04-03 11:30 UTC (in 1h30m)."},
		{"first one running", Status{Running: true, Since: now.Add(-12 * time.Second)},
			"The first Dream is running now (started 12s ago); it has not changed the memory files yet."},
		{"ran and changed nothing", Status{Last: &LastRun{When: now.Add(-3 * time.Minute), Outcome: OutcomeNothingNew}},
			"No Dream commits yet: Dreams have run (the last 3m ago: nothing new to read) but none has changed the memory files."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatNoDreamCommits(tt.s, now, "/dream"); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
