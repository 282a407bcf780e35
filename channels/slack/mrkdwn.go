package slack

import (
	"regexp"
	"strings"
	"sync"
)

// Markdown to Slack mrkdwn, for what models write: **bold** -> *bold*,
// *it* and __x__ -> _x_ (_x_ is kept), ~~s~~ -> ~s~, [text](url) and
// ![alt](url) -> <url|text>, "# Heading" -> *Heading*, list markers -> •,
// fenced blocks -> plain ``` fences (Slack shows an info string as code),
// tables -> aligned code blocks (mrkdwn has no tables, and raw pipe rows
// are hard to read in a proportional font).
//
// Inside code spans and fenced blocks nothing is converted, but & < > are
// still escaped there as everywhere: Slack parses <…> as links and mentions
// even inside backticks (`map<string,string>` loses its brackets, a
// "<!channel>" in a code block would ping everyone), and it decodes the
// entities again for display, so the code reads exactly as written.
// Autolinks (<https://…>) and user/channel references (<@U…>, <#C…>) are kept;
// any other <…>, such as <!channel>, is escaped so model output cannot ping
// a whole channel.

// The patterns are compiled on first use: every run of the binary would pay
// for them at start-up, and most never talk to Slack.
var mrkdwnRE = sync.OnceValue(func() *mrkdwnPatterns {
	return &mrkdwnPatterns{
		heading:  regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`),
		bullet:   regexp.MustCompile(`^([ \t]*)[*+-][ \t]+`),
		hrule:    regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`),
		quote:    regexp.MustCompile(`^ {0,3}(?:>[ \t]?)+`),
		slackRef: regexp.MustCompile(`^<[@#][A-Z0-9]+(?:\|[^<>]*)?>`),
		autolink: regexp.MustCompile(`^<((?:https?://|mailto:)[^\s<>]+)>`),
	}
})

type mrkdwnPatterns struct {
	heading, bullet, hrule, quote *regexp.Regexp
	// slackRef matches references Slack itself renders: <@U…>, <#C…>,
	// optionally with a |label.
	slackRef *regexp.Regexp
	autolink *regexp.Regexp
}

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeText escapes Slack's three control characters.
func escapeText(s string) string { return textEscaper.Replace(s) }

var urlEscaper = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C", " ", "%20")

// toMrkdwn converts Markdown text to Slack mrkdwn.
func toMrkdwn(md string) string {
	if md == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(md) + len(md)/16)
	var fenceChar byte // '`' or '~' while inside a fenced block
	var fenceLen int
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if i > 0 {
			b.WriteByte('\n')
		}
		if fenceChar == 0 {
			if n := tableLen(lines[i:]); n > 0 {
				b.WriteString(renderTable(lines[i : i+n]))
				i += n - 1
				continue
			}
		}
		trimmed := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(trimmed)]
		if fenceChar != 0 {
			if len(indent) <= 3 && closesFence(trimmed, fenceChar, fenceLen) {
				b.WriteString(indent + "```")
				fenceChar = 0
				continue
			}
			b.WriteString(escapeText(line))
			continue
		}
		if ch, n, ok := opensFence(trimmed); ok && len(indent) <= 3 {
			fenceChar, fenceLen = ch, n
			b.WriteString(indent + "```")
			continue
		}
		b.WriteString(convertLine(line))
	}
	return b.String()
}

// opensFence reports whether line (without its indent) opens a fenced block.
func opensFence(line string) (ch byte, n int, ok bool) {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return 0, 0, false
	}
	ch = line[0]
	for n < len(line) && line[n] == ch {
		n++
	}
	if n < 3 || (ch == '`' && strings.ContainsRune(line[n:], '`')) {
		return 0, 0, false
	}
	return ch, n, true
}

// closesFence reports whether line closes a block opened with n ch's.
func closesFence(line string, ch byte, n int) bool {
	m := 0
	for m < len(line) && line[m] == ch {
		m++
	}
	return m >= n && strings.TrimSpace(line[m:]) == ""
}

// convertLine converts one line outside fenced blocks.
func convertLine(line string) string {
	lead := strings.TrimLeft(line, " \t")
	if lead == "" || strings.IndexByte("#-*_+>", lead[0]) < 0 {
		// The common case: no block marker, so skip the regexps.
		return convertInline(line, false)
	}
	if m := mrkdwnRE().heading.FindStringSubmatch(line); m != nil {
		if strings.TrimSpace(m[1]) == "" {
			return ""
		}
		return "*" + convertInline(strings.TrimSpace(m[1]), true) + "*"
	}
	if mrkdwnRE().hrule.MatchString(line) {
		return "──────────"
	}
	if q := mrkdwnRE().quote.FindString(line); q != "" {
		// A line-start ">" is Slack's quote marker too; keep it unescaped.
		marks := strings.Count(q, ">")
		return strings.Repeat(">", marks) + " " + convertLine(line[len(q):])
	}
	if m := mrkdwnRE().bullet.FindStringSubmatchIndex(line); m != nil {
		return line[m[2]:m[3]] + "• " + convertInline(line[m[1]:], false)
	}
	return convertInline(line, false)
}

// convertInline converts inline Markdown. In headings (noBold) bold markers
// are dropped, since the whole heading is already bold.
func convertInline(s string, noBold bool) string {
	c := inlineConv{src: s, noBold: noBold}
	return c.run()
}

type inlineConv struct {
	src    string
	noBold bool
	// noCloser remembers delimiters with no closer left in src, so a line of
	// many unmatched "**" stays linear instead of rescanning to its end.
	noCloser [4]bool // indexed by delimIndex
	b        strings.Builder
}

func (c *inlineConv) run() string {
	s := c.src
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_~[]()#<>!|", s[i+1]) >= 0:
			// A Markdown escape: keep both characters so the escaped one
			// does not start any markup here.
			c.b.WriteString(escapeText(s[i : i+2]))
			i += 2
		case ch == '`':
			i = c.codeSpan(i)
		case strings.HasPrefix(s[i:], "**"), strings.HasPrefix(s[i:], "__"), strings.HasPrefix(s[i:], "~~"):
			i = c.emphasis(i, s[i:i+2])
		case ch == '*':
			i = c.emphasis(i, "*")
		case ch == '!' && i+1 < len(s) && s[i+1] == '[':
			if next, ok := c.link(i + 1); ok {
				i = next
			} else {
				c.b.WriteByte('!')
				i++
			}
		case ch == '[':
			if next, ok := c.link(i); ok {
				i = next
			} else {
				c.b.WriteByte('[')
				i++
			}
		case ch == '<':
			if m := mrkdwnRE().slackRef.FindString(s[i:]); m != "" {
				c.b.WriteString(m)
				i += len(m)
			} else if m := mrkdwnRE().autolink.FindStringSubmatch(s[i:]); m != nil {
				c.b.WriteString("<" + urlEscaper.Replace(m[1]) + ">")
				i += len(m[0])
			} else {
				c.b.WriteString("&lt;")
				i++
			}
		case ch == '&':
			c.b.WriteString("&amp;")
			i++
		case ch == '>':
			c.b.WriteString("&gt;")
			i++
		default:
			c.b.WriteByte(ch)
			i++
		}
	}
	return c.b.String()
}

// codeSpan copies a `code` span starting at i (escaped, not converted) and
// returns the index after it; an unmatched run of backticks is literal.
func (c *inlineConv) codeSpan(i int) int {
	s := c.src
	n := runLen(s, i, '`')
	end := findBacktickRun(s, i+n, n)
	if end < 0 {
		c.b.WriteString(s[i : i+n])
		return i + n
	}
	body := s[i+n : end]
	if n > 1 {
		// Slack knows only single-backtick spans.
		body = strings.TrimSpace(body)
	}
	c.b.WriteString("`" + escapeText(body) + "`")
	return end + n
}

// emphasis converts the span opened by delim at i, or writes delim as text
// when it does not open a span.
func (c *inlineConv) emphasis(i int, delim string) int {
	s := c.src
	start := i + len(delim)
	end := -1
	if canOpen(s, i, delim) && !c.noCloser[delimIndex(delim)] {
		end = findCloser(s, start, delim)
		if end < 0 {
			c.noCloser[delimIndex(delim)] = true
		}
	}
	if end < 0 {
		c.b.WriteString(delim)
		return start
	}
	inner := convertInline(s[start:end], c.noBold)
	switch delim {
	case "**":
		if c.noBold {
			c.b.WriteString(inner)
		} else {
			c.b.WriteString("*" + inner + "*")
		}
	case "~~":
		c.b.WriteString("~" + inner + "~")
	default: // "*" and "__": italics in Slack
		c.b.WriteString("_" + inner + "_")
	}
	return end + len(delim)
}

func delimIndex(delim string) int {
	switch delim {
	case "**":
		return 0
	case "__":
		return 1
	case "~~":
		return 2
	}
	return 3
}

// link converts [text](url) starting at the '[' at i; ok is false when the
// text there is not a link.
func (c *inlineConv) link(i int) (next int, ok bool) {
	s := c.src
	depth := 0
	closeBracket := -1
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth == 0 {
			closeBracket = j
			break
		}
	}
	if closeBracket < 0 || closeBracket+1 >= len(s) || s[closeBracket+1] != '(' {
		return 0, false
	}
	closeParen := strings.IndexByte(s[closeBracket+2:], ')')
	if closeParen < 0 {
		return 0, false
	}
	closeParen += closeBracket + 2
	target := strings.TrimSpace(s[closeBracket+2 : closeParen])
	if sp := strings.IndexAny(target, " \t"); sp >= 0 {
		target = target[:sp] // drop a "title"
	}
	target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
	if target == "" {
		return 0, false
	}
	label := strings.TrimSpace(s[i+1 : closeBracket])
	if label == "" {
		c.b.WriteString("<" + urlEscaper.Replace(target) + ">")
	} else {
		c.b.WriteString("<" + urlEscaper.Replace(target) + "|" + escapeText(label) + ">")
	}
	return closeParen + 1, true
}

// canOpen applies Markdown's flanking rules, simplified: the delimiter must
// be followed by a non-space, and "_" runs must not start inside a word
// (snake_case stays as it is).
func canOpen(s string, i int, delim string) bool {
	after := i + len(delim)
	if after >= len(s) || isSpace(s[after]) {
		return false
	}
	if delim[0] == '_' && i > 0 && isWordByte(s[i-1]) {
		return false
	}
	return true
}

// findCloser returns the index of the delimiter closing a span that starts
// at from, skipping code spans, or -1.
func findCloser(s string, from int, delim string) int {
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '\\':
			j++
			continue
		case s[j] == '`':
			n := runLen(s, j, '`')
			if end := findBacktickRun(s, j+n, n); end >= 0 {
				j = end + n - 1
			} else {
				j += n - 1
			}
			continue
		}
		if !strings.HasPrefix(s[j:], delim) {
			continue
		}
		if delim == "*" && strings.HasPrefix(s[j:], "**") {
			// A nested **bold** inside *italics*: step over the pair.
			j++
			continue
		}
		if j == from || isSpace(s[j-1]) {
			continue
		}
		if delim[0] == '_' && j+len(delim) < len(s) && isWordByte(s[j+len(delim)]) {
			continue
		}
		return j
	}
	return -1
}

func runLen(s string, i int, ch byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == ch {
		n++
	}
	return n
}

// findBacktickRun finds a run of exactly n backticks at or after from.
func findBacktickRun(s string, from, n int) int {
	for j := from; j < len(s); {
		if s[j] != '`' {
			j++
			continue
		}
		m := runLen(s, j, '`')
		if m == n {
			return j
		}
		j += m
	}
	return -1
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
