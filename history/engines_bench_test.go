package history_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// openPostgres opens the PostgreSQL engine on dsn, closed when b ends.
func openPostgres(b *testing.B, dsn string) *postgres.DB {
	b.Helper()
	db, err := postgres.Open(b.Context(), dsn, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	return db
}

// benchEntries is the workspace size of the copy benchmarks.
const benchEntries = 100_000

// fillFiles writes n archive entries of about 300 characters into a
// history.jsonl of its own, in two scopes, with sources.
func fillFiles(b *testing.B, n int) *history.Store {
	b.Helper()
	h, err := history.Open(filepath.Join(b.TempDir(), "memory"), history.Options{})
	if err != nil {
		b.Fatal(err)
	}
	team := audience.Scope("team-slack-t1")
	var page []store.Entry
	for i := 1; i <= n; i++ {
		e := store.Entry{Cursor: i, Timestamp: "2026-04-03 09:30", SessionKey: fmt.Sprintf("slack:C%d", i%50),
			Content: fmt.Sprintf("- fact %d: the team ships release %d on Fridays; Ana reviews the notes and Bob signs them off before noon.", i, i)}
		if i%2 == 0 {
			e.Scope = team
		}
		e.SetSource(store.Source{SessionID: "g", From: i * 4, To: i*4 + 4})
		page = append(page, e)
		if len(page) == 5000 || i == n {
			if _, err := h.Import(page); err != nil {
				b.Fatal(err)
			}
			page = page[:0]
		}
	}
	return h
}

// BenchmarkCopyArchive100K: dreamgate migrate --to-postgres and dreamgate
// export of a 100,000-entry archive, as store.CopyArchive does them
// (entries/s and the wall time of one copy).
func BenchmarkCopyArchive100K(b *testing.B) {
	files := fillFiles(b, benchEntries)
	b.Run("files-to-postgres", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := openPostgres(b, pgtest.DSN(b))
			b.StartTimer()
			r, err := store.CopyArchive(db.Archive(), files)
			if err != nil || r.Entries != benchEntries {
				b.Fatalf("copy: %+v %v", r, err)
			}
		}
		b.ReportMetric(float64(benchEntries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("postgres-to-files", func(b *testing.B) {
		db := openPostgres(b, pgtest.DSN(b))
		if _, err := store.CopyArchive(db.Archive(), files); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			out, err := history.Open(filepath.Join(b.TempDir(), "memory"), history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			r, err := store.CopyArchive(out, db.Archive())
			if err != nil || r.Entries != benchEntries {
				b.Fatalf("copy: %+v %v", r, err)
			}
		}
		b.ReportMetric(float64(benchEntries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}

// BenchmarkArchiveTurn is what a chat turn asks of the archive on each
// engine, over a 100,000-entry archive with Dream's cursor at 99,000: the
// prompt's Recent history (UnreadLast, 50), and one archive in ten turns
// (ArchivedAt, then AppendFrom). p50 and p99 of each turn's time.
func BenchmarkArchiveTurn(b *testing.B) {
	files := fillFiles(b, benchEntries)
	db := openPostgres(b, pgtest.DSN(b))
	if _, err := store.CopyArchive(db.Archive(), files); err != nil {
		b.Fatal(err)
	}
	for _, eng := range []struct {
		name string
		h    store.History
	}{{"embedded", files}, {"postgres", db.Archive()}} {
		if err := eng.h.SetDreamCursor(benchEntries - 1000); err != nil {
			b.Fatal(err)
		}
		b.Run(eng.name, func(b *testing.B) {
			var times []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				key := fmt.Sprintf("slack:C%d", i%50)
				if _, err := eng.h.UnreadLast(key, 50); err != nil {
					b.Fatal(err)
				}
				if i%10 == 0 {
					gen := fmt.Sprintf("bench-%d", i)
					if _, _, err := eng.h.ArchivedAt(key, gen, 0); err != nil {
						b.Fatal(err)
					}
					if _, err := eng.h.AppendFrom(audience.Default, "- a new fact from this turn", key, store.Source{SessionID: gen, From: 0, To: 4}); err != nil {
						b.Fatal(err)
					}
				}
				times = append(times, time.Since(start))
				i++
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
		})
	}
}
