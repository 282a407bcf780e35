package consolidator

import (
	"log/slog"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
)

// openTestStore opens a history store on dir with a fixed clock, so entry
// timestamps are known.
func openTestStore(t *testing.T, dir string, logger *slog.Logger) *history.Store {
	t.Helper()
	s, err := history.Open(dir, history.Options{
		Logger: logger,
		Now:    func() time.Time { return time.Date(2026, 4, 3, 0, 2, 30, 0, time.Local) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cursors(es []history.Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Cursor
	}
	return out
}
