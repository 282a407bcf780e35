package consolidator

import "github.com/dreamgate/dreamgate/history"

// Caps on archive entries, in characters (Unicode code points, as nanobot
// counts them); history.Store applies its own, larger, hard cap.
const (
	// MaxSummaryChars caps an archive summary.
	MaxSummaryChars = 8000
	// MaxRawChars caps a "[RAW] N messages" entry.
	MaxRawChars = 16000
)

// truncatedSuffix marks a cut made by capChars.
const truncatedSuffix = history.TruncatedSuffix

// capChars cuts s to at most limit characters and marks the cut, as the
// history store does; it reports whether it cut.
func capChars(s string, limit int) (string, bool) { return history.CapChars(s, limit) }
