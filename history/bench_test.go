package history

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkAppendDurable: one fsynced history append; reports p50 and p99.
func BenchmarkAppendDurable(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	content := "- " + strings.Repeat("the archive keeps words ", 125) // ~500 words, as the consolidator's prose
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := s.Append(content, "slack:C1:1712.55"); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
