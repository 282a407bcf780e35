package dream

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
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

// Retention with memory scopes retires entries whatever their scope, and
// moves every scope's cursor past them, so the frontier (and the history
// with it) is bounded; a scope first seen among the entries it keeps is
// recorded at the frontier, so they stay unread for it.
func TestRetentionRetiresEveryScope(t *testing.T) {
	entryDay := time.Date(2026, 4, 3, 12, 0, 0, 0, time.Local)
	e := newEnv(t)
	old, err := history.Open(e.hist.dir, history.Options{Now: func() time.Time { return entryDay }})
	if err != nil {
		t.Fatal(err)
	}
	scopes := []audience.Scope{audience.Default, "team-slack-t1", "person-slack-t1-u2"}
	for i := range 30 {
		if _, err := old.AppendIn(scopes[i%3], fmt.Sprintf("- fact %d", i+1), "k"); err != nil {
			t.Fatal(err)
		}
	}
	e.writeRecord(record{Scopes: map[audience.Scope]*progress{audience.Default: {}, "team-slack-t1": {}}})
	r := Retention{Ledger: NewLedger(e.ws, e.hist, nil), MaxEntries: 10, MaxAge: 24 * time.Hour, Logger: slog.New(e.logs), Now: func() time.Time { return entryDay.AddDate(0, 1, 0) }}
	retired, dropped, err := r.Pass()
	if err != nil || retired != 20 || dropped != 20 {
		t.Fatalf("retired %d, dropped %d, %v; want 20, 20", retired, dropped, err)
	}
	rec := e.record()
	if rec.Frontier != 20 || e.hist.cursor(t) != 20 {
		t.Errorf("frontier %d, cursor file %d; want 20", rec.Frontier, e.hist.cursor(t))
	}
	for _, s := range scopes {
		if p := rec.Scopes[s]; p == nil || p.Cursor != 20 {
			t.Errorf("scope %q: %+v, want cursor 20", s, p)
		}
	}
}
