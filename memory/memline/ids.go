package memline

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Ids. Every fact of a scope's memory (its hot files and cold memory)
// carries an id that is unique within the scope and never changes while
// the fact stands: a correction names the id of the line it replaces, and
// the replaced line points at its replacement by id, so that no text has
// to match for the program to know which line a correction meant. An id
// is a few lower-case hex digits: short, because a model reads and writes
// them, and longer only where the short form is taken.

// Length bounds of an id.
const (
	minID = 4
	maxID = 16
)

// IsID reports whether s is written as an id: 4 to 16 digits and
// lower-case letters.
func IsID(s string) bool {
	if len(s) < minID || len(s) > maxID {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// ParseIDs reads a comma-separated list of ids; ok is false when any is
// not one.
func ParseIDs(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	var out []string
	for _, id := range strings.Split(s, ",") {
		if !IsID(id) {
			return nil, false
		}
		out = append(out, id)
	}
	return out, true
}

// NewID makes an id for a new line from seed (what the line says and
// came from, so that the same edit gives the same id), as short as taken
// allows: the shortest prefix of seed's hash that taken does not report,
// else a counter appended.
func NewID(seed string, taken func(id string) bool) string {
	sum := sha256.Sum256([]byte(seed))
	h := hex.EncodeToString(sum[:])
	for n := minID; n <= maxID; n++ {
		if id := h[:n]; !taken(id) {
			return id
		}
	}
	for i := 2; ; i++ {
		if id := h[:maxID-4] + strconv.Itoa(i); !taken(id) && IsID(id) {
			return id
		}
	}
}

// Seed is what NewID is given for l: its text, date and sources.
func (l Line) Seed() string {
	var b strings.Builder
	b.WriteString(Key(l.Text))
	b.WriteByte('\n')
	b.WriteString(l.Date)
	for _, s := range l.Sources {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(s))
	}
	return b.String()
}

// Reason says why a line of cold memory left hot memory.
type Reason string

// The reasons.
const (
	// Aged: an ephemeral line whose date passed the age ephemeral lines
	// keep (the program's, at a Dream).
	Aged Reason = "aged"
	// Budget: the program moved it out to bring the memory within its
	// budget, lowest priority and oldest first; it was still true.
	Budget Reason = "budget"
	// Moved: the deep Dream's review moved it out to make room, as what
	// mattered least; it was still true.
	Moved Reason = "moved"
	// Retired: the deep Dream's review found it no longer true or useful
	// (a past plan, a finished task).
	Retired Reason = "retired"
	// Merged: the deep Dream merged it with others into one line
	// (SupersededBy names it).
	Merged Reason = "merged"
	// Replaced: a correction replaced it (SupersededBy names the line).
	Replaced Reason = "replaced"
)

// Known reports whether r is one of the reasons.
func (r Reason) Known() bool {
	switch r {
	case Aged, Budget, Moved, Retired, Merged, Replaced:
		return true
	}
	return false
}
