package dream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// Tags of phase 1's answer.
const (
	tagUser       = "USER"
	tagSoul       = "SOUL"
	tagMemory     = "MEMORY"
	tagFileRemove = "FILE-REMOVE"
	tagSkip       = "SKIP"
)

// correctionWord marks a finding that replaces what a file says (nanobot's
// consolidator writes it where a priority would go); phase 2 is told, and
// the line it writes is dated like any changed line.
const correctionWord = "correction"

// finding is one line of phase 1's answer that phase 2 acts on.
type finding struct {
	Tag  string `json:"tag"` // tagUser, tagSoul, tagMemory or tagFileRemove
	Text string `json:"text"`
	// Priority is the word phase 1 put after the tag ("[USER] [ephemeral]
	// …"), "" when it gave none: the line phase 2 writes for the finding
	// gets it unless the model wrote one itself.
	Priority memline.Priority `json:"priority,omitempty"`
	// Correction: phase 1 said the finding replaces an older fact.
	Correction bool `json:"correction,omitempty"`
	// Replaces are the ids of the lines (hot or cold) phase 1 said the
	// finding corrects ([replaces:7f3a]): the program marks them
	// superseded by the line written for it.
	Replaces []string `json:"replaces,omitempty"`
}

func (f finding) String() string {
	s := "[" + f.Tag + "] "
	if f.Priority != "" {
		s += "[" + string(f.Priority) + "] "
	}
	if f.Correction {
		s += "[" + correctionWord + "] "
	}
	if len(f.Replaces) > 0 {
		s += "[" + replacesWord + ":" + strings.Join(f.Replaces, ",") + "] "
	}
	return s + f.Text
}

// replacesWord names the lines a finding corrects, by id:
// "[USER] [replaces:7f3a] Ana's office is Canal Road."
const replacesWord = "replaces"

// parseReplaces reads a "[replaces:…]" qualifier (as splitTag upper-cased
// it; "REPLACES 7F3A" and "REPLACES: 7F3A, 9B2C" too); ok is false for
// any other tag.
func parseReplaces(tag string) ([]string, bool) {
	rest, found := strings.CutPrefix(tag, strings.ToUpper(replacesWord))
	if !found {
		return nil, false
	}
	rest = strings.TrimLeft(rest, ":-= ")
	var ids []string
	for _, id := range strings.FieldsFunc(strings.ToLower(rest), func(r rune) bool { return r == ',' || r == ' ' || r == '-' }) {
		id = strings.TrimPrefix(id, "id:")
		if memline.IsID(id) {
			ids = append(ids, id)
		}
	}
	return ids, len(ids) > 0
}

// analysis is phase 1's answer, parsed.
type analysis struct {
	findings []finding
	skips    int      // [SKIP] lines
	ignored  []string // non-blank lines that carry no known tag
}

// parseAnalysis reads phase 1's answer. It accepts the tag after list
// markers and emphasis a model may add ("- [USER] …", "**[SOUL]** …", "1.
// [MEMORY] …"), tags in any letter case, and a ':' after the tag. A
// priority word in brackets may follow the tag or come before it ("[USER]
// [ephemeral] …", "[permanent] [SOUL] …"), and so may nanobot's
// [correction]; a finding without one is valid as before. Fact tags with
// no text, unknown tags ([SKILL]) and prose are ignored; code fences are
// not counted as ignored. Identical findings are kept once.
func parseAnalysis(out string) analysis {
	var a analysis
	seen := map[string]bool{}
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
		var q qualifiers
		// A qualifier before the tag: the tag is the next bracket.
		for i := 0; i < 3 && tag != "" && isQualifier(tag); i++ {
			q.add(tag)
			if tag, text, ok = splitTag(text); !ok {
				tag = ""
			}
		}
		// Qualifiers after the tag.
		for i := 0; i < 3; i++ {
			t, rest, ok := splitTag(text)
			if !ok || !isQualifier(t) {
				break
			}
			q.add(t)
			text = rest
		}
		switch tag {
		case tagSkip:
			a.skips++
		case tagUser, tagSoul, tagMemory, tagFileRemove:
			if text == "" {
				a.ignored = append(a.ignored, line)
				continue
			}
			f := finding{Tag: tag, Text: text, Priority: q.prio, Correction: q.correction || len(q.replaces) > 0, Replaces: q.replaces}
			if k := f.String(); !seen[k] {
				seen[k] = true
				a.findings = append(a.findings, f)
			}
		default:
			a.ignored = append(a.ignored, line)
		}
	}
	return a
}

// isQualifier reports a bracketed word that qualifies a finding rather
// than tagging it: a priority, [correction] or [replaces:…] (as splitTag
// upper-cases it).
func isQualifier(tag string) bool {
	_, ok := memline.ParsePriority(tag)
	_, replaces := parseReplaces(tag)
	return ok || replaces || strings.EqualFold(tag, correctionWord)
}

// qualifiers are what the bracketed words around a finding's tag said.
type qualifiers struct {
	prio       memline.Priority
	correction bool
	replaces   []string
}

// add records the qualifier t: the first priority given wins.
func (q *qualifiers) add(t string) {
	if p, ok := memline.ParsePriority(t); ok {
		if q.prio == "" {
			q.prio = p
		}
		return
	}
	if ids, ok := parseReplaces(t); ok {
		for _, id := range ids {
			q.replaces = appendNew(q.replaces, id)
		}
		return
	}
	q.correction = true
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

// analyse is phase 1: the batch's entries, whole, with the scope's files,
// in as many model calls as fit the Dream model's window (phase1Parts),
// each turned into findings. A non-nil error is the batch's result (a
// *RunError); no findings and no error means the model read every entry
// and found nothing to keep.
func (b *batch) analyse(ctx context.Context, guide string, files []memFile) ([]finding, error) {
	d, rep := b.d, b.rep
	today := d.now()
	cold := b.coldShownFor()
	empty := phase1Messages(guide, nil, today, files, cold)
	fixed := d.count.Count(empty[0].Content) + d.count.Count(empty[1].Content)
	parts := d.phase1Parts(b.entries, d.room(fixed))
	if len(parts) > 1 {
		d.log.Info("dream reads the batch in parts that fit the model's window", "entries", len(b.entries), "calls", len(parts))
	}
	var out []finding
	seen := map[string]bool{}
	for _, part := range parts {
		found, err := b.analysePart(ctx, phase1Messages(guide, part, today, files, cold))
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if k := f.String(); !seen[k] {
				seen[k] = true
				out = append(out, f)
			}
		}
	}
	rep.Findings = len(out)
	return out, nil
}

// analysePart is one call of phase 1.
func (b *batch) analysePart(ctx context.Context, msgs []llm.Message) ([]finding, error) {
	d, rep := b.d, b.rep
	resp, err := d.model.Chat(ctx, llm.Request{
		Model:    d.cfg.Model,
		Messages: msgs,
		Purpose:  llm.PurposeDreamAnalysis,
		CacheKey: cacheKeyAnalysis,
	})
	rep.Calls++
	rep.Phase1 = rep.Phase1.Add(resp.Usage)
	rep.Usage = rep.Usage.Add(resp.Usage)
	if err != nil {
		return nil, b.modelFailure(ctx, "analysis", err)
	}
	switch {
	case resp.FinishReason == llm.FinishLength:
		return nil, b.fail(true, "the analysis was cut off at the model's output limit", errors.New("phase 1 answer cut off (finish_reason length)"))
	case strings.TrimSpace(resp.Content) == "":
		return nil, b.fail(true, "the model's analysis was empty", errors.New("phase 1 answer empty"))
	}
	a := parseAnalysis(resp.Content)
	if len(a.ignored) > 0 {
		d.log.Info("dream analysis lines ignored", "count", len(a.ignored))
		for _, line := range a.ignored {
			d.log.Debug("dream analysis line ignored", "line", line)
		}
	}
	if len(a.findings) == 0 && a.skips == 0 {
		// Prose, an error text or a format the model made up: taking it
		// for "nothing to do" would advance the cursor past what the users
		// said without anything having read it.
		return nil, b.fail(true, "the model's analysis did not use the expected format", fmt.Errorf("phase 1 answer has no tagged line (%d lines ignored)", len(a.ignored)))
	}
	return a.findings, nil
}
