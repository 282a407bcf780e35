package dream

import (
	"strings"
)

// Tags of phase 1's answer.
const (
	tagUser       = "USER"
	tagSoul       = "SOUL"
	tagMemory     = "MEMORY"
	tagFileRemove = "FILE-REMOVE"
	tagSkip       = "SKIP"
)

// finding is one line of phase 1's answer that phase 2 acts on.
type finding struct {
	Tag  string `json:"tag"` // tagUser, tagSoul, tagMemory or tagFileRemove
	Text string `json:"text"`
}

func (f finding) String() string { return "[" + f.Tag + "] " + f.Text }

// analysis is phase 1's answer, parsed.
type analysis struct {
	findings []finding
	skips    int      // [SKIP] lines
	ignored  []string // non-blank lines that carry no known tag
}

// parseAnalysis reads phase 1's answer. It accepts the tag after list
// markers and emphasis a model may add ("- [USER] …", "**[SOUL]** …", "1.
// [MEMORY] …"), tags in any letter case, and a ':' after the tag. Fact tags
// with no text, unknown tags ([SKILL]) and prose are ignored; code fences are
// not counted as ignored. Identical findings are kept once.
func parseAnalysis(out string) analysis {
	var a analysis
	seen := map[finding]bool{}
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "```") {
			continue
		}
		tag, text, ok := splitTag(line)
		if !ok {
			a.ignored = append(a.ignored, line)
			continue
		}
		switch tag {
		case tagSkip:
			a.skips++
		case tagUser, tagSoul, tagMemory, tagFileRemove:
			if text == "" {
				a.ignored = append(a.ignored, line)
				continue
			}
			f := finding{Tag: tag, Text: text}
			if !seen[f] {
				seen[f] = true
				a.findings = append(a.findings, f)
			}
		default:
			a.ignored = append(a.ignored, line)
		}
	}
	return a
}

// splitTag finds a leading "[TAG]" after list markers and emphasis.
func splitTag(line string) (tag, text string, ok bool) {
	s := trimMarker(line)
	s = strings.TrimLeft(s, "*_` ")
	if !strings.HasPrefix(s, "[") {
		return "", "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", false
	}
	tag = strings.ToUpper(strings.TrimSpace(s[1:end]))
	tag = strings.ReplaceAll(tag, "_", "-")
	tag = strings.ReplaceAll(tag, " ", "-")
	if tag == "" {
		return "", "", false
	}
	rest := strings.TrimLeft(s[end+1:], "*_`")
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSpace(strings.TrimLeft(rest, ":-–—"))
	return tag, rest, true
}

// trimMarker drops a leading list marker: "-", "*", "•", "+", or "12." /
// "12)".
func trimMarker(s string) string {
	switch {
	case strings.HasPrefix(s, "- "), strings.HasPrefix(s, "* "), strings.HasPrefix(s, "+ "):
		return strings.TrimSpace(s[2:])
	case strings.HasPrefix(s, "•"):
		return strings.TrimSpace(strings.TrimPrefix(s, "•"))
	}
	i := 0
	for i < len(s) && i < 4 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}
