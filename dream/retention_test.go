package dream

import (
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// TestRetentionBoundsHistoryWhileDreamIsOff: with Dream off nothing reads
// the history, so compaction alone could never drop an entry; Retention
// retires the oldest unread entries past the age limit, only as many as
// bring the history back to MaxEntries, and logs it.
func TestRetentionBoundsHistoryWhileDreamIsOff(t *testing.T) {
	entryDay := time.Date(2026, 4, 3, 12, 0, 0, 0, time.Local)
	tests := []struct {
		name        string
		now         time.Time
		wantRetired int
		wantLen     int
	}{
		{"old entries over the limit", entryDay.AddDate(0, 2, 0), 500, 1000},
		{"young entries are kept", entryDay.AddDate(0, 0, 10), 0, 1500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.hist.seed(t, 0, 1500, func(i int) string { return fmt.Sprintf("- fact %d", i) })
			r := Retention{Ledger: NewLedger(e.ws, e.hist, nil), MaxEntries: 1000, MaxAge: 30 * 24 * time.Hour, Logger: slog.New(e.logs), Now: func() time.Time { return tc.now }}
			retired, dropped, err := r.Pass()
			if err != nil {
				t.Fatal(err)
			}
			if retired != tc.wantRetired || dropped != tc.wantRetired {
				t.Errorf("retired %d, dropped %d, want %d", retired, dropped, tc.wantRetired)
			}
			all := e.hist.all(t)
			if len(all) != tc.wantLen {
				t.Errorf("history holds %d entries, want %d", len(all), tc.wantLen)
			}
			if c := e.hist.cursor(t); c != tc.wantRetired {
				t.Errorf("dream cursor = %d, want %d", c, tc.wantRetired)
			}
			warned := e.logs.Find(slog.LevelWarn, "Dream is off")
			if (len(warned) == 1) != (tc.wantRetired > 0) {
				t.Errorf("warnings = %+v", warned)
			}
			// A second pass has nothing to do.
			if retired, dropped, err := r.Pass(); err != nil || retired != 0 || dropped != 0 {
				t.Errorf("second pass: %d, %d, %v", retired, dropped, err)
			}
		})
	}
}
