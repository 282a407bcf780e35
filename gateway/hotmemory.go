package gateway

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// Hot memory: a prompt shows each memory scope's files (SOUL.md, USER.md,
// memory/MEMORY.md) within a budget of tokens per scope, the one Dream
// compacts a scope to. A file is never cut silently: when a scope's lines
// cost more than the budget, whole lines are shown by priority then date
// (permanent first, newest first), in their files' order, and one sentence
// says how many were left out and where to look for them; the scope is
// then reported for a deep Dream. The choice depends on the files alone,
// so a conversation's system prompt stays byte-identical from turn to turn
// until a file changes (providers' prompt caches).

// HotMemory is how a PromptBuilder fits memory into a prompt.
type HotMemory struct {
	// Tokens is each scope's budget; 0 shows every line.
	Tokens int
	// Counter counts tokens as the consolidator does (the project's one
	// tokenizer); required when Tokens is set.
	Counter TokenCounter
	// Recall says chat turns have the recall tool, which the prompt then
	// names as the way to what is not shown. New sets it from
	// Deps.Recall, whatever the caller gave.
	Recall bool
}

// TokenCounter counts the tokens of a text (*consolidator.Counter).
type TokenCounter interface {
	Count(s string) int
}

// DeepDreams takes requests for a deep Dream of a scope whose memory no
// longer fits its budget in the prompt. Dream's ledger implements it; a
// request may wait for a running Dream, so the gateway makes it in the
// background. An error is logged: the next change of the scope's files
// asks again.
type DeepDreams interface {
	RequestDeep(scope audience.Scope) error
}

// shownFile is one memory file of a scope as the prompt shows it.
type shownFile struct {
	rel, text string
}

// hotPart is a scope's memory as the prompt shows it.
type hotPart struct {
	files []shownFile // the files with something to show, in order
	// shown and total count the scope's lines (facts and prose; not
	// headings or blank lines) shown and held.
	shown, total int
	// tokens is what the shown lines cost, as the budget counts them
	// (0 when the scope fits without counting).
	tokens int
	// dated: some line shown ends in a date (datedNote explains it).
	dated bool
}

// omitted is the sentence that says what the prompt leaves out of a
// scope's memory, "" when nothing is.
func (h hotPart) omitted(recall bool) string {
	if h.shown == h.total {
		return ""
	}
	s := fmt.Sprintf("(%d of the %d lines of this memory, the least important and oldest, are not shown here, to keep this prompt within its memory budget",
		h.total-h.shown, h.total)
	if recall {
		return s + "; search past conversations and cold memory with the recall tool for anything not shown.)"
	}
	return s + ".)"
}

// datedNote tells the model what the dates after memory lines mean; it is
// shown only when some line has one.
const datedNote = "A date after a memory line is when it was last confirmed (the day for something short-lived, else the month)."

// hotLine is one line of a scope's files, a candidate for the prompt.
type hotLine struct {
	file, index int // where it is
	text        string
	structure   bool // a heading or a blank line: always shown
	prose       bool // not a fact: shown before any fact
	rank        int  // the fact's priority rank
	date        time.Time
	dated       bool // has a date suffix
}

// fitScope chooses what the prompt shows of a scope's files (texts, by
// name, "" for a file not shown) within budget tokens (0: everything).
func fitScope(rels, texts []string, budget int, counter TokenCounter) (hotPart, bool) {
	var lines []hotLine
	bytes := 0
	for fi, text := range texts {
		if text == "" {
			continue
		}
		for i, it := range memline.ParseFile([]byte(text)).Items {
			if memory.Superseded(it) {
				continue // no longer current: never shown as if it were
			}
			s, dated := memory.ShownLine(it)
			hl := hotLine{file: fi, index: i, text: s, dated: dated}
			trimmed := strings.TrimSpace(it.Raw)
			switch {
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
				hl.structure = true
			case !it.Fact:
				hl.prose = true
			default:
				hl.rank = it.Line.Effective().Rank()
				hl.date, _ = it.Line.Time()
			}
			lines = append(lines, hl)
			bytes += len(s) + 1
		}
	}
	keep := make([]bool, len(lines))
	total := 0
	for i, l := range lines {
		keep[i] = true
		if !l.structure {
			total++
		}
	}
	part := hotPart{shown: total, total: total}
	// A byte is at least a token's worth of text, so a scope of fewer
	// bytes than its budget fits without the tokenizer.
	if budget > 0 && bytes > budget {
		part.shown, part.tokens = choose(lines, keep, budget, counter)
	}
	part.files, part.dated = render(rels, texts, lines, keep)
	return part, part.shown < part.total
}

// choose keeps the structure and then the lines in order of importance
// (prose, then facts by priority, newest first, the later in its file first
// among equals) while they fit budget; it returns how many lines it kept
// and what they cost. Each line costs its tokens and one for its line
// break, which bounds the tokens of the lines joined.
func choose(lines []hotLine, keep []bool, budget int, counter TokenCounter) (shown, tokens int) {
	order := make([]int, 0, len(lines))
	for i, l := range lines {
		if l.structure {
			tokens += memory.LineCost(counter, l.text)
			continue
		}
		keep[i] = false
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		la, lb := lines[a], lines[b]
		if la.prose != lb.prose {
			if la.prose {
				return -1
			}
			return 1
		}
		if la.prose {
			return a - b
		}
		if la.rank != lb.rank {
			return la.rank - lb.rank
		}
		if c := lb.date.Compare(la.date); c != 0 {
			return c // newest first; an undated line is the oldest
		}
		return b - a
	})
	for _, i := range order {
		c := memory.LineCost(counter, lines[i].text)
		if tokens+c > budget {
			break
		}
		tokens += c
		keep[i] = true
		shown++
	}
	return shown, tokens
}

// render writes the kept lines of each file in their order, runs of blank
// lines left by the lines not shown made one; dated reports a kept line
// that shows a date.
func render(rels, texts []string, lines []hotLine, keep []bool) (files []shownFile, dated bool) {
	per := make([][]string, len(texts))
	for i, l := range lines {
		if !keep[i] {
			continue
		}
		out := per[l.file]
		if strings.TrimSpace(l.text) == "" && (len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == "") {
			continue
		}
		per[l.file] = append(out, l.text)
		dated = dated || l.dated
	}
	for fi, ls := range per {
		if text := strings.TrimSpace(strings.Join(ls, "\n")); text != "" {
			files = append(files, shownFile{rel: rels[fi], text: text})
		}
	}
	return files, dated
}

// HotUsage is what a scope's memory costs in a prompt against its budget:
// the memory page's gauge.
type HotUsage struct {
	// Tokens is what all the scope's lines cost as the prompt shows them
	// (each line and its break), shown or not: above Budget, the prompt
	// leaves the least important, oldest lines out. Budget is 0 when there
	// is none (every line is shown, and Tokens is not counted).
	Tokens, Budget int
	// Shown and Total count the lines (facts and prose, not headings or
	// blank lines) the prompt shows and the scope holds.
	Shown, Total int
}

// HotUsage says what scope s's memory files cost in a prompt, counted as
// the prompt counts them (memory.Cost).
func (p *PromptBuilder) HotUsage(s audience.Scope) HotUsage {
	part := p.part(s, false)
	u := HotUsage{Budget: p.hot.Tokens, Shown: part.shown, Total: part.total}
	if p.hot.Tokens == 0 {
		return u
	}
	// Counted again only when a file changed: the memory page asks at
	// every view, and counting a full scope's lines is most of its time.
	files, _ := p.mem.Hot(s) // part logged what it could not read
	var stamps [3]string
	texts := make([]string, len(files))
	for i, f := range files {
		stamps[i], texts[i] = f.Stamp, f.Text
	}
	p.mu.Lock()
	c, ok := p.usage[s]
	p.mu.Unlock()
	if ok && c.stamps == stamps {
		u.Tokens = c.tokens
		return u
	}
	u.Tokens = memory.Cost(p.hot.Counter, texts...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.usage) >= maxCachedFiles {
		clear(p.usage)
	}
	p.usage[s] = cachedUsage{stamps: stamps, tokens: u.Tokens}
	return u
}

// cachedUsage is a scope's HotUsage tokens for its files' versions.
type cachedUsage struct {
	stamps [3]string
	tokens int
}
