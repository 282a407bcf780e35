package dream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// coldOf is a cold memory of n lines with ids, in sections of 50.
func coldOf(n int) []byte {
	var b strings.Builder
	b.WriteString("# Cold memory\n")
	for i := range n {
		if i%50 == 0 {
			fmt.Fprintf(&b, "\n## 2026-%02d-01, from USER.md: moved out to keep the memory within its budget\n\n", 1+i/50%12)
		}
		fmt.Fprintf(&b, "- Project P%05d ships from office %d. <!-- durable 2026-01-01 src:%d id:%05x out:2026-02-01 why:budget -->\n", i, i%40, i+1, i)
	}
	return []byte(b.String())
}

// What a batch adds to a Dream for cold memory of 10,000 lines: choosing
// the lines phase 1 is shown (coldShown) and the upkeep's bookkeeping
// (ids, supersede, aging: keepLines) of a batch that corrects one cold
// line.
func BenchmarkColdShown10K(b *testing.B) {
	cold := coldOf(10_000)
	entries := []history.Entry{{Cursor: 1, Content: "- Project P00042 ships from office 7 now, not office 2."}}
	b.ReportAllocs()
	for b.Loop() {
		if len(coldShown(cold, entries)) == 0 {
			b.Fatal("nothing shown")
		}
	}
}

func BenchmarkKeepLines10K(b *testing.B) {
	cold := coldOf(10_000)
	before := "# User\n\n- Ana likes tea. <!-- durable 2026-11-01 src:1 id:aaaa -->\n"
	after := before + "- Project P00042 ships from office 7. <!-- replaces:0002a -->\n"
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		f := &editedFile{rel: fileUser, before: memline.ParseFile([]byte(before)), after: memline.ParseFile([]byte(after))}
		c := memline.ParseFile(cold)
		keepLines(day, 30, []*editedFile{f}, c, nil, false)
		if !strings.Contains(string(c.Bytes()), "superseded-by:") {
			b.Fatal("nothing superseded")
		}
	}
}
