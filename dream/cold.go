package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Cold memory (memory.Cold, memory/COLD.md in each scope's folder) is
// where lines go when they leave a scope's memory files. Nothing Dream
// takes out of hot memory is deleted: it is here, with its metadata, and
// in git. Each line says when it left and why (memline: out:, why:): aged
// out, moved out by the program for the budget, moved out or retired by
// the deep Dream's review, merged, or replaced by a correction — and a
// line a later one replaced says which (superseded-by:), wherever it
// stands, so that nobody takes it for current. A heading over each group
// says the same in words. No prompt shows cold memory (its cost would grow
// with age); the recall tool searches it, and phase 1 is shown the few
// lines that may concern its batch, so that a correction can name them.

// coldHeader opens a new cold-memory file.
const coldHeader = `# Cold memory

Lines that left this memory's files (SOUL.md, USER.md, memory/MEMORY.md). Each says when it left and why (out: and why: in its comment): aged out, moved out to keep the files within their budget, moved out or retired by the deep Dream's review, merged, or replaced; a line a later one replaced names it (superseded-by:) and is no longer current. Prompts do not show these lines; the recall tool searches them. Every change is a git commit (/dream-log), and /dream-restore puts lines back.
`

// coldSection is lines moved out of one file for one reason.
type coldSection struct {
	from string // the memory file, relative to the scope's folder
	why  memline.Reason
	// by, for a line merged or replaced, is the id of the line that
	// replaced it (each line's own SupersededBy otherwise).
	lines []memline.Line
}

// coldHeading is a section's heading: why its lines left (days: the age
// ephemeral lines keep).
func coldHeading(why memline.Reason, days int) string {
	switch why {
	case memline.Aged:
		return fmt.Sprintf("aged out: ephemeral, last confirmed more than %d days ago", days)
	case memline.Budget:
		return "moved out by the program to keep the memory within its budget (still true when moved)"
	case memline.Moved:
		return "moved out by the deep Dream's review to make room (still true when moved)"
	case memline.Retired:
		return "retired by the deep Dream's review: no longer true or no longer useful"
	case memline.Merged:
		return "merged by the deep Dream into one line (superseded-by names it)"
	case memline.Replaced:
		return "replaced by a correction (superseded-by names the line that replaced it)"
	}
	return string(why)
}

func coldCount(sections []coldSection) int {
	n := 0
	for _, s := range sections {
		n += len(s.lines)
	}
	return n
}

// coldFile is a scope's cold memory as read for a change.
type coldFile struct {
	data []byte // as read
	f    *memline.File
}

// readCold reads the scope's cold memory (ws is the scope's folder); the
// caller holds the write lock. A missing file is an empty one.
func readCold(ws *workspace.Root) (*coldFile, error) {
	data, err := ws.ReadFile(memory.Cold)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", memory.Cold, err)
	}
	return &coldFile{data: data, f: memline.ParseFile(data)}, nil
}

// write writes the cold memory with the sections appended (day: when
// their lines left; days: the age of ephemeral lines), if anything
// changed. The caller holds the write lock.
func (c *coldFile) write(ws *workspace.Root, day time.Time, days int, sections []coldSection) error {
	cur := c.f.Bytes()
	if coldCount(sections) == 0 && string(cur) == string(c.data) {
		return nil
	}
	return writeKeepingMode(ws, memory.Cold, coldText(cur, day, days, sections))
}

// coldText is old with the sections appended, each line saying when it
// left (out:) and why (why:).
func coldText(old []byte, day time.Time, days int, sections []coldSection) []byte {
	var b strings.Builder
	if len(strings.TrimSpace(string(old))) == 0 {
		b.WriteString(coldHeader)
	} else {
		b.Write(old)
		if !strings.HasSuffix(string(old), "\n") {
			b.WriteByte('\n')
		}
	}
	out := day.Format(memline.DateLayout)
	for _, s := range sections {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s, from %s: %s\n\n", out, s.from, coldHeading(s.why, days))
		for _, l := range s.lines {
			l.Indent = ""
			l.Out, l.Why = out, s.why
			b.WriteString(l.String())
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}
