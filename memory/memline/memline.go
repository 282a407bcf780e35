// Package memline reads and writes one line of a memory file (SOUL.md,
// USER.md, memory/MEMORY.md, cold memory): a Markdown list item holding one
// fact, with the fact's priority, the date it was last confirmed, the
// history entries it came from and its stable id in a trailing HTML
// comment:
//
//   - Ana prefers dark mode. <!-- durable 2026-11-26 src:41,57 id:7f3a -->
//
// A line that corrects or merges others names them (replaces:7f3a,9b2c);
// a line another replaced says which (superseded-by:c2d9): it is no longer
// current, wherever it stands. A line in cold memory says when it left hot
// memory and why (out:2026-12-01 why:budget; see Reason).
//
// The comment is what keeps the file readable by everyone who reads it:
// rendered Markdown hides it, nanobot reading the raw file sees harmless
// text, and a person who edits the fact and leaves the comment keeps its
// metadata. A line without the comment (written by hand, by an older
// version or by nanobot) is a fact all the same: durable, undated, of no
// known source. Headings, blank lines and prose are not facts and are kept
// exactly as they are.
//
// Package memory owns the format; this is its leaf: it imports nothing of
// dreamgate's, so that any layer may read a memory line (the rule-following
// fake model in llm/llmtest reads them as a model reads a prompt).
package memline

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Priority says how long a fact matters.
type Priority string

// The priorities, from the longest-lived.
const (
	// Permanent facts are never retired or moved out of hot memory by a
	// mechanical step: names, standing preferences, rules.
	Permanent Priority = "permanent"
	// Durable facts hold until contradicted; the default.
	Durable Priority = "durable"
	// Ephemeral facts are about now (a plan for Friday, who is away this
	// week) and retire after an age.
	Ephemeral Priority = "ephemeral"
)

// Rank orders priorities from the most important: Permanent 0, Durable 1,
// Ephemeral 2; anything else ranks as Durable.
func (p Priority) Rank() int {
	switch p {
	case Permanent:
		return 0
	case Ephemeral:
		return 2
	default:
		return 1
	}
}

// ParsePriority reads a priority word, case-insensitively; ok is false for
// anything else.
func ParsePriority(s string) (Priority, bool) {
	switch p := Priority(strings.ToLower(strings.TrimSpace(s))); p {
	case Permanent, Durable, Ephemeral:
		return p, true
	}
	return "", false
}

// DateLayout is the form of a Line's date.
const DateLayout = "2006-01-02"

// MaxSources bounds the source cursors a line keeps (the newest).
const MaxSources = 8

// Line is one fact of a memory file.
type Line struct {
	// Indent is the white space before the bullet; Bullet is "-" or "*".
	Indent, Bullet string
	// Text is the fact, without the bullet and without the comment.
	Text string
	// Priority, Date and Sources come from the comment; all are empty
	// for a line without one (see HasMeta).
	Priority Priority
	Date     string // DateLayout, "" when undated
	Sources  []int  // history cursors, oldest first
	// ID is the line's stable id ("" until Dream gives it one): it stays
	// with the fact wherever the line moves, and other lines name it.
	ID string
	// Replaces are the ids of the lines this one corrected or merged.
	Replaces []string
	// SupersededBy is the id of the line that replaced this one: set, the
	// line is no longer current.
	SupersededBy string
	// Out is the day the line left hot memory (DateLayout) and Why the
	// reason, for a line of cold memory; both "" in the hot files.
	Out string
	Why Reason
}

// HasMeta reports whether the line carries provenance: a priority, a date
// or sources (an id alone is not provenance: a line written by hand that
// Dream gave an id is still of unknown age and source).
func (l Line) HasMeta() bool { return l.Priority != "" || l.Date != "" || len(l.Sources) > 0 }

// HasComment reports whether the line is written with a comment of ours
// (any metadata, an id or a cold line's words).
func (l Line) HasComment() bool { return l.meta() != "" }

// Superseded reports whether another line replaced this one.
func (l Line) Superseded() bool { return l.SupersededBy != "" }

// Effective is the line's priority, Durable when it names none.
func (l Line) Effective() Priority {
	if l.Priority == "" {
		return Durable
	}
	return l.Priority
}

// Time is the line's date at midnight UTC; ok is false when undated.
func (l Line) Time() (t time.Time, ok bool) {
	t, err := time.Parse(DateLayout, l.Date)
	return t, err == nil
}

// Confirm records that the fact was stated (again) on day, from the
// history entries cursors: the date moves to day, and the cursors join the
// sources (the newest MaxSources kept).
func (l *Line) Confirm(day time.Time, cursors ...int) {
	l.Date = day.Format(DateLayout)
	for _, c := range cursors {
		if c > 0 && !containsInt(l.Sources, c) {
			l.Sources = append(l.Sources, c)
		}
	}
	if n := len(l.Sources); n > MaxSources {
		l.Sources = append([]int(nil), l.Sources[n-MaxSources:]...)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Shown is the line as a prompt shows it: without its comment, and
// followed by its date — the day for an ephemeral fact, the month for a
// durable one, nothing for a permanent or undated one (it does not age);
// dated says whether a date was added. Priorities are not shown: each
// word costs tokens at every turn. The prompt builder shows a line this
// way, and Dream measures a scope's memory with it, so that the two agree
// on what a budget holds.
func (l Line) Shown() (text string, dated bool) {
	bullet := l.Bullet
	if bullet == "" {
		bullet = "-"
	}
	s := l.Indent + bullet + " " + l.Text
	t, ok := l.Time()
	switch {
	case !ok || l.Effective() == Permanent:
		return s, false
	case l.Effective() == Ephemeral:
		return s + " (" + l.Date + ")", true
	default:
		return s + " (" + t.Format("Jan 2006") + ")", true
	}
}

// String is the line as it is written in the file: the bullet, the fact
// and, when there is metadata, the comment (one space after the fact,
// whatever white space ended it).
func (l Line) String() string {
	var b strings.Builder
	b.WriteString(l.Indent)
	b.WriteString(l.bullet())
	b.WriteByte(' ')
	m := l.meta()
	if m == "" {
		b.WriteString(l.Text)
	} else {
		b.WriteString(strings.TrimRight(l.Text, " \t"))
		b.WriteString(" <!-- ")
		b.WriteString(m)
		b.WriteString(" -->")
	}
	return b.String()
}

func (l Line) bullet() string {
	if l.Bullet == "" {
		return "-"
	}
	return l.Bullet
}

// meta renders the comment's content.
func (l Line) meta() string {
	var parts []string
	if l.Priority != "" {
		parts = append(parts, string(l.Priority))
	}
	if l.Date != "" {
		parts = append(parts, l.Date)
	}
	if len(l.Sources) > 0 {
		s := make([]string, len(l.Sources))
		for i, c := range l.Sources {
			s[i] = strconv.Itoa(c)
		}
		parts = append(parts, "src:"+strings.Join(s, ","))
	}
	if l.ID != "" {
		parts = append(parts, "id:"+l.ID)
	}
	if len(l.Replaces) > 0 {
		parts = append(parts, "replaces:"+strings.Join(l.Replaces, ","))
	}
	if l.Out != "" {
		parts = append(parts, "out:"+l.Out)
	}
	if l.Why != "" {
		parts = append(parts, "why:"+string(l.Why))
	}
	if l.SupersededBy != "" {
		parts = append(parts, "superseded-by:"+l.SupersededBy)
	}
	return strings.Join(parts, " ")
}

// Parse reads one line of a memory file (without its line break). ok is
// false when the line is not a fact: not a list item, or an empty one.
// A trailing comment that is not ours (other words in it) stays part of
// the text.
func Parse(s string) (l Line, ok bool) {
	rest := strings.TrimLeft(s, " \t")
	indent := s[:len(s)-len(rest)]
	if len(rest) < 2 || (rest[0] != '-' && rest[0] != '*') || (rest[1] != ' ' && rest[1] != '\t') {
		return Line{}, false
	}
	l = Line{Indent: indent, Bullet: rest[:1]}
	text := strings.TrimLeft(rest[2:], " \t")
	if strings.TrimSpace(text) == "" || isRule(rest) {
		return Line{}, false
	}
	if body, meta, found := cutComment(text); found {
		if m, ok := parseMeta(meta); ok {
			m.Indent, m.Bullet = l.Indent, l.Bullet
			m.Text = body
			return m, true
		}
	}
	l.Text = text
	return l, true
}

// isRule reports a Markdown thematic break written with bullets ("- - -",
// "***"), which is not a fact.
func isRule(s string) bool {
	n := 0
	for _, r := range s {
		switch r {
		case '-', '*':
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// cutComment splits a trailing "<!-- … -->" off text.
func cutComment(text string) (body, meta string, ok bool) {
	t := strings.TrimRight(text, " \t")
	if !strings.HasSuffix(t, "-->") {
		return "", "", false
	}
	i := strings.LastIndex(t, "<!--")
	if i < 0 || i+len("<!--") > len(t)-len("-->") {
		return "", "", false // none, or "<!-->": the two overlap
	}
	body = strings.TrimRight(t[:i], " \t")
	if body == "" {
		return "", "", false
	}
	return body, strings.TrimSpace(t[i+4 : len(t)-3]), true
}

// parseMeta reads the comment's words: a priority, a date, "src:"
// cursors, "id:", "replaces:", "out:", "why:" and "superseded-by:", each at
// most once, in any order. Any other word makes it not ours.
func parseMeta(meta string) (Line, bool) {
	var l Line
	words := strings.Fields(meta)
	if len(words) == 0 {
		return Line{}, false
	}
	for _, w := range words {
		if !l.readWord(w) {
			return Line{}, false
		}
	}
	return l, true
}

// readWord takes one word of a comment into l; false when it is no word
// of ours, or one l has already.
func (l *Line) readWord(w string) bool {
	key, val, _ := strings.Cut(w, ":")
	switch {
	case l.Priority == "" && isPriority(w):
		l.Priority, _ = ParsePriority(w)
	case l.Date == "" && isDate(w):
		l.Date = w
	case l.Sources == nil && key == "src":
		src, ok := parseSources(val)
		l.Sources = src
		return ok
	case l.ID == "" && key == "id" && IsID(val):
		l.ID = val
	case l.Replaces == nil && key == "replaces":
		ids, ok := ParseIDs(val)
		l.Replaces = ids
		return ok
	case l.Out == "" && key == "out" && isDate(val):
		l.Out = val
	case l.Why == "" && key == "why" && Reason(val).Known():
		l.Why = Reason(val)
	case l.SupersededBy == "" && key == "superseded-by" && IsID(val):
		l.SupersededBy = val
	default:
		return false
	}
	return true
}

func isPriority(w string) bool {
	_, ok := ParsePriority(w)
	return ok && w == strings.ToLower(w)
}

func isDate(w string) bool {
	if len(w) != len(DateLayout) {
		return false
	}
	_, err := time.Parse(DateLayout, w)
	return err == nil
}

func parseSources(s string) ([]int, bool) {
	if s == "" {
		return nil, false
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || strconv.Itoa(n) != p {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// Item is one line of a file: a fact (Fact true, Line set) or anything
// else, kept as Raw. Raw is always the line as it will be written: change
// a fact through SetLine.
type Item struct {
	Raw  string
	Fact bool
	Line Line
}

// SetLine replaces the item's fact and its written form.
func (it *Item) SetLine(l Line) {
	it.Fact, it.Line, it.Raw = true, l, l.String()
}

// File is a memory file as lines; Format writes it back byte for byte when
// nothing was changed.
type File struct {
	Items []Item
	// trailing is whether the data ended with a line break.
	trailing bool
	crlf     bool
}

// ParseFile splits data into items. Line breaks may be "\n" or "\r\n"
// (kept as found, by the file's first line break).
func ParseFile(data []byte) *File {
	f := &File{}
	if len(data) == 0 {
		return f
	}
	f.crlf = bytes.Contains(data, []byte("\r\n"))
	text := string(data)
	if f.crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	f.trailing = strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	for _, s := range strings.Split(text, "\n") {
		it := Item{Raw: s}
		if l, ok := Parse(s); ok {
			it.Fact, it.Line = true, l
		}
		f.Items = append(f.Items, it)
	}
	return f
}

// Facts returns the indexes of the file's facts, in order.
func (f *File) Facts() []int {
	var out []int
	for i, it := range f.Items {
		if it.Fact {
			out = append(out, i)
		}
	}
	return out
}

// Bytes writes the file.
func (f *File) Bytes() []byte {
	if len(f.Items) == 0 {
		return nil
	}
	nl := "\n"
	if f.crlf {
		nl = "\r\n"
	}
	var b strings.Builder
	for i, it := range f.Items {
		if i > 0 {
			b.WriteString(nl)
		}
		b.WriteString(it.Raw)
	}
	if f.trailing {
		b.WriteString(nl)
	}
	return []byte(b.String())
}

// Key is a fact's text reduced for comparison: lower case, runs of white
// space and the trailing full stop dropped, so that "Ana likes tea." and
// "ana likes  tea" are one fact.
func Key(text string) string {
	return strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(text), " ")), ".")
}
