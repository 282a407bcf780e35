package slack

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Markdown tables (a header row, a delimiter row such as |---|:--:|, body
// rows) become code blocks with aligned columns: Slack's mrkdwn has no
// tables, and pipe rows in a proportional font do not line up.

var delimCellRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^:?-+:?$`) })

// tableLen returns how many of lines, from the first, form a table; 0 when
// they do not start one.
func tableLen(lines []string) int {
	if len(lines) < 2 || !strings.Contains(lines[0], "|") {
		return 0
	}
	head, delim := splitRow(lines[0]), splitRow(lines[1])
	if len(head) < 2 || len(delim) != len(head) {
		return 0
	}
	for _, c := range delim {
		if !delimCellRE().MatchString(c) {
			return 0
		}
	}
	n := 2
	for n < len(lines) && strings.Contains(lines[n], "|") && strings.TrimSpace(lines[n]) != "" {
		n++
	}
	return n
}

// splitRow splits "| a | b |" into its trimmed cells; "\|" is a pipe in a
// cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// cellMarkup is inline Markdown that a code block would show literally.
var cellMarkup = strings.NewReplacer("**", "", "__", "", "`", "", "~~", "")

// renderTable renders the table rows (header, delimiter, body) as a code
// block, columns padded to their widest cell and aligned as the delimiter
// row says.
func renderTable(rows []string) string {
	head := splitRow(rows[0])
	cols := len(head)
	align := make([]byte, cols) // 'l', 'r' or 'c'
	for i, d := range splitRow(rows[1]) {
		switch {
		case strings.HasPrefix(d, ":") && strings.HasSuffix(d, ":"):
			align[i] = 'c'
		case strings.HasSuffix(d, ":"):
			align[i] = 'r'
		default:
			align[i] = 'l'
		}
	}
	table := [][]string{head}
	for _, r := range rows[2:] {
		cells := splitRow(r)
		cells = append(cells, make([]string, max(0, cols-len(cells)))...)
		table = append(table, cells[:cols])
	}
	width := make([]int, cols)
	for r, row := range table {
		for c, cell := range row {
			row[c] = cellMarkup.Replace(cell)
			table[r] = row
			width[c] = max(width[c], utf8.RuneCountInString(row[c]))
		}
	}
	var b strings.Builder
	b.WriteString("```\n")
	for r, row := range table {
		for c, cell := range row {
			if c > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(escapeText(pad(cell, width[c], align[c], c == cols-1)))
		}
		b.WriteByte('\n')
		if r == 0 {
			for c := range cols {
				if c > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", width[c]))
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString("```")
	return b.String()
}

// pad fits s to width; the last column of a left-aligned table gets no
// trailing spaces.
func pad(s string, width int, align byte, last bool) string {
	gap := width - utf8.RuneCountInString(s)
	switch align {
	case 'r':
		return strings.Repeat(" ", gap) + s
	case 'c':
		left := gap / 2
		s = strings.Repeat(" ", left) + s
		if last {
			return s
		}
		return s + strings.Repeat(" ", gap-left)
	}
	if last {
		return s
	}
	return s + strings.Repeat(" ", gap)
}
