package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Cold memory (workspace.Cold, memory/COLD.md in each scope's folder) is
// where lines go when they leave a scope's memory files: expired ephemeral
// lines, the lines a deep Dream merged, dropped or moved out to bring the
// scope back under its budget. Nothing Dream takes out of hot memory is
// deleted: it is here, with its metadata, under a heading that says when,
// from which file and why, and in git. No prompt shows it (its cost would
// grow with age); the recall tool searches it. Dream only appends to it
// and never reads it into a model call.

// coldHeader opens a new cold-memory file.
const coldHeader = `# Cold memory

Lines that left this memory's files (SOUL.md, USER.md, memory/MEMORY.md): retired when they were out of date, merged, replaced, or moved out to keep the files within their budget. Prompts do not show them; the recall tool searches them. Every change is a git commit (/dream-log), and /dream-restore puts lines back.
`

// coldSection is lines moved out of one file for one reason.
type coldSection struct {
	from   string // the memory file, relative to the scope's folder
	reason string
	lines  []memline.Line
}

// Reasons a line goes to cold memory, as the section headings say.
const (
	reasonReviewed = "taken out by the deep Dream's review (merged, replaced or no longer true)"
	reasonBudget   = "moved out to keep the memory within its budget"
)

func reasonExpired(days int) string {
	return fmt.Sprintf("retired: ephemeral, last confirmed more than %d days ago", days)
}

func coldCount(sections []coldSection) int {
	n := 0
	for _, s := range sections {
		n += len(s.lines)
	}
	return n
}

// appendCold adds the sections to the scope's cold memory (ws is the
// scope's folder), creating the file when missing. The caller holds the
// write lock.
func appendCold(ws *workspace.Root, day time.Time, sections []coldSection) error {
	if coldCount(sections) == 0 {
		return nil
	}
	old, err := ws.ReadFile(workspace.Cold)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", workspace.Cold, err)
	}
	return writeKeepingMode(ws, workspace.Cold, coldText(old, day, sections))
}

// coldText is old with the sections appended.
func coldText(old []byte, day time.Time, sections []coldSection) []byte {
	var b strings.Builder
	if len(strings.TrimSpace(string(old))) == 0 {
		b.WriteString(coldHeader)
	} else {
		b.Write(old)
		if !strings.HasSuffix(string(old), "\n") {
			b.WriteByte('\n')
		}
	}
	for _, s := range sections {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s, from %s: %s\n\n", day.Format(memline.DateLayout), s.from, s.reason)
		for _, l := range s.lines {
			l.Indent = ""
			b.WriteString(l.String())
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}
