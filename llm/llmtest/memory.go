package llmtest

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// MemoryModel answers every call of dreamgate's memory pipeline by simple,
// fixed rules, so a test that plays a scripted conversation knows what ends
// up in the memory files. Use it as a responder: srv.SetResponder(MemoryModel).
//
// The call is recognised by its messages:
//
//   - Archive call (no tools, "Archive this part of the conversation"): one
//     "- " line per sentence of a USER or TOOL line of the transcript that
//     states something (not a question, at least four words); "(nothing)"
//     when there is none. Assistant lines are never evidence.
//   - Dream analysis (no tools, "## Archive entries"): each archived "- "
//     line becomes one finding, by the first rule that fits:
//     "forget [about] [my|the] X" gives [FILE-REMOVE] X; "…, not X" is a
//     correction: the rest of the sentence, tagged by the next rules, with
//     [replaces:<ids>] naming every current memory line shown (the files
//     and the cold memory below them) that holds the word X, as a careful
//     model names what a correction replaces — or, when none is shown,
//     [FILE-REMOVE] X before it;
//     "you" or "please" gives [SOUL]; "I'm", "I am", "I live", "I moved",
//     "I work" or "my" gives [USER]; anything else [MEMORY]. A fact tag is
//     followed by a priority when a rule says one: [ephemeral] for a fact
//     bound to a day ("today", "tomorrow", "tonight", "this week", "next
//     Friday", "on Monday", "until Friday"), else [permanent] for a [SOUL]
//     rule that says "always" or "never". [SKIP] when there are no lines.
//   - Dream editing (tools, "## Findings to apply"): the findings are
//     applied in order to the files shown in the prompt (a fact is appended
//     as a "- " line unless the file has a line stating it, whatever that
//     line's metadata comment; a removal deletes every line containing its
//     text, in any letter case; a finding with [replaces:<ids>] replaces
//     the first line of a file with one of those ids (in its comment, or
//     as the prompt's list of lines without an id says), deleting the
//     others, or is appended when no file holds one, its line ending in
//     "<!-- replaces:<ids> -->" as the rules ask) and sent as one
//     edit_file call per changed file, all in one reply; after the tool
//     results, "Done.". It writes no other comment: the program keeps the
//     lines' metadata.
//   - Deep Dream (no tools, "## Deep Dream"): facts that are the same
//     (memline.Key) are merged into the text of the one confirmed last;
//     facts the same but for their last word (a correction: "Ana lives in
//     Lisbon." / "Ana lives in Porto.") are replaced by the one confirmed
//     last (REPLACE … WITH); and when the request says "This pass
//     must free … (about N facts)" — only then, like a small model that
//     shrinks timidly until told firmly — the N lowest facts that are not
//     merged or permanent move out, ephemeral before durable, oldest (or
//     undated) first. "DONE" when there is nothing to do.
//   - Chat turn (tools): after a tool result, "It says: " and the result's
//     first line. Otherwise the last message is read without the gateway's
//     "[Now: …]" header and "[Ana] " name: a message with "read" and a path
//     (a word with "/" or ending in .txt or .md) calls read_file on it; a
//     question (ending in "?") is answered with the "- " line of the system prompt's memory
//     files sharing the most words with it, or "I don't know."; anything
//     else gets "Got it.". When no line holds every word of the question
//     and the "recall" tool is offered, it is called with the question's
//     words instead, and its result answered with "I found: " and the
//     match sharing the most words with the question (or "I don't know.").
func MemoryModel(r Request) Reply { return pipelineReply(r, memAnalyse, memEdit) }

// pipelineReply tells the pipeline's calls apart by their messages and
// answers each by its rule: archive and chat as MemoryModel does, the two
// Dream phases by analyse and edit.
func pipelineReply(r Request, analyse func(user string) string, edit func(r Request, user string) Reply) Reply {
	user := lastOfRole(r.Messages, llm.RoleUser)
	switch {
	case len(r.Tools) == 0 && strings.HasPrefix(user, "Archive this part of the conversation"):
		return Text(memArchive(user))
	case len(r.Tools) == 0 && strings.HasPrefix(user, "## Archive entries"):
		return Text(analyse(user))
	case len(r.Tools) == 0 && strings.HasPrefix(user, "## Deep Dream"):
		return Text(memDeep(user))
	case len(r.Tools) > 0 && strings.HasPrefix(user, "## Findings to apply"):
		return edit(r, user)
	case len(r.Tools) > 0:
		return memChat(r)
	}
	return Text("ok")
}

func lastOfRole(msgs []llm.Message, role string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return msgs[i].Content
		}
	}
	return ""
}

// transcriptLine matches "[2026-04-03 00:02] USER: …" and "TOOL read_file: …".
// "[…] ASSISTANT [calls recall(query=x)]" has no colon: a turn of its own
// with nothing to keep.
var transcriptLine = regexp.MustCompile(`^(?:\[[^\]]*\] )?(USER|ASSISTANT|TOOL|SYSTEM)\b([^:]*)(?:: ?(.*))?$`)

func memArchive(transcript string) string {
	var facts []string
	role := ""
	for _, line := range strings.Split(transcript, "\n") {
		text := line
		if m := transcriptLine.FindStringSubmatch(line); m != nil {
			role, text = m[1], m[3]
			if role == "TOOL" && strings.TrimSpace(m[2]) == recallTool {
				role = "" // what recall found was archived before
			}
		}
		if role != "USER" && role != "TOOL" {
			continue
		}
		for _, s := range sentences(text) {
			if strings.HasSuffix(s, "?") || len(strings.Fields(s)) < 4 {
				continue
			}
			facts = append(facts, "- "+s)
		}
	}
	if len(facts) == 0 {
		return "(nothing)"
	}
	return strings.Join(facts, "\n")
}

// sentences splits text after '.', '!' or '?' followed by a space.
func sentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(text) || text[i+1] == ' ') {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

var (
	forgetRe = regexp.MustCompile(`(?i)\bforget (?:about )?(?:my |the )?(.+?)[.!]*$`)
	notRe    = regexp.MustCompile(`,? not ([A-Z][\w-]*)`)
	soulRe   = regexp.MustCompile(`(?i)\b(you|please)\b`)
	userRe   = regexp.MustCompile(`(?i)\b(I'm|I am|I live|I moved|I work|my)\b`)
	// dayRe finds a fact bound to a day: an ephemeral one.
	dayRe = regexp.MustCompile(`(?i)\b(today|tonight|tomorrow|this (week|weekend|month)|next (week|weekend|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(on|until|till) (monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b`)
	// ruleRe finds a standing rule: a permanent one.
	ruleRe = regexp.MustCompile(`(?i)\b(always|never)\b`)
)

// priorityOf is the priority word a memory fake puts after a finding's
// tag ("" for none).
func priorityOf(tag, fact string) string {
	switch {
	case dayRe.MatchString(fact):
		return "[ephemeral] "
	case tag == "[SOUL] " && ruleRe.MatchString(fact):
		return "[permanent] "
	}
	return ""
}

// findingFact splits a finding line of a phase-2 prompt into its tag
// ("[USER] ") and its fact, the priority or [correction] words after the
// tag dropped; ok is false for a line of another kind.
func findingFact(line string) (tag, fact string, ok bool) {
	for _, t := range []string{"[USER] ", "[SOUL] ", "[MEMORY] ", "[FILE-REMOVE] "} {
		if rest, found := strings.CutPrefix(line, t); found {
			for _, q := range []string{"[permanent] ", "[durable] ", "[ephemeral] ", "[correction] "} {
				rest = strings.TrimPrefix(rest, q)
			}
			rest = replacesRe.ReplaceAllString(rest, "")
			return t, rest, true
		}
	}
	return "", "", false
}

// replacesRe is a finding's [replaces:<ids>].
var replacesRe = regexp.MustCompile(`\[replaces:([0-9a-z,]+)\] `)

// findingReplaces is the ids a finding line names as replaced (nil: none).
func findingReplaces(line string) []string {
	if m := replacesRe.FindStringSubmatch(line); m != nil {
		return strings.Split(m[1], ",")
	}
	return nil
}

// shownLines are the current memory lines with an id a Dream analysis
// prompt shows after its archive entries (the files and cold memory).
func shownLines(prompt string) []memline.Line {
	_, rest, _ := strings.Cut(prompt, "\n## Today")
	var out []memline.Line
	for _, line := range strings.Split(rest, "\n") {
		if l, ok := memline.Parse(line); ok && l.ID != "" && !l.Superseded() {
			out = append(out, l)
		}
	}
	return out
}

// holdingWord is the ids of lines whose text holds word (whole, in any
// letter case).
func holdingWord(lines []memline.Line, word string) []string {
	re := regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(word) + `\b`)
	var ids []string
	for _, l := range lines {
		if re.MatchString(l.Text) {
			ids = append(ids, l.ID)
		}
	}
	return ids
}

// hasFact reports whether text holds a memory line stating fact (compared
// as memline.Key compares facts, whatever the line's metadata comment).
func hasFact(text, fact string) bool {
	key := memline.Key(fact)
	for _, it := range memline.ParseFile([]byte(text)).Items {
		if it.Fact && memline.Key(it.Line.Text) == key {
			return true
		}
	}
	return false
}

// historyFacts returns the facts of the history entries a Dream analysis
// prompt lists ("[2026-04-03 10:00] - fact" or "- fact"), before its
// "## Today" section.
func historyFacts(prompt string) []string {
	body, _, _ := strings.Cut(prompt, "\n## Today")
	var facts []string
	for _, line := range strings.Split(body, "\n") {
		_, fact, ok := strings.Cut(line, "] - ")
		if !ok {
			if !strings.HasPrefix(line, "- ") {
				continue
			}
			fact = strings.TrimPrefix(line, "- ")
		}
		facts = append(facts, strings.TrimSpace(fact))
	}
	return facts
}

func memAnalyse(prompt string) string {
	var out []string
	shown := shownLines(prompt)
	for _, fact := range historyFacts(prompt) {
		if m := forgetRe.FindStringSubmatch(fact); m != nil {
			out = append(out, "[FILE-REMOVE] "+m[1])
			continue
		}
		replaces := ""
		if m := notRe.FindStringSubmatch(fact); m != nil {
			if ids := holdingWord(shown, m[1]); len(ids) > 0 {
				replaces = "[replaces:" + strings.Join(ids, ",") + "] "
			} else {
				out = append(out, "[FILE-REMOVE] "+m[1])
			}
			fact = strings.Replace(fact, m[0], "", 1)
		}
		tag := "[MEMORY] "
		switch {
		case soulRe.MatchString(fact):
			tag = "[SOUL] "
		case userRe.MatchString(fact):
			tag = "[USER] "
		}
		out = append(out, tag+priorityOf(tag, fact)+replaces+fact)
	}
	if len(out) == 0 {
		return "[SKIP]"
	}
	return strings.Join(out, "\n")
}

var fileHeader = regexp.MustCompile(`(?m)^### (SOUL\.md|USER\.md|memory/MEMORY\.md) \((\d+) characters\)\n`)

func memEdit(r Request, prompt string) Reply {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == llm.RoleTool {
		return Text("Done.")
	}
	findings, filesPart, _ := strings.Cut(prompt, "\n## Current memory files")
	orig := map[string]string{}
	var order []string
	for _, m := range fileHeader.FindAllStringSubmatchIndex(filesPart, -1) {
		name := filesPart[m[2]:m[3]]
		n, _ := strconv.Atoi(filesPart[m[4]:m[5]])
		orig[name] = takeRunes(filesPart[m[1]:], n)
		order = append(order, name)
		// A file shown cut (its tool results are cut too) is edited where
		// it can be seen, as a careful model would: the complete lines
		// shown are a prefix of the file, which old_text matches.
		if shown, _, cut := strings.Cut(orig[name], "…[truncated]"); cut {
			if i := strings.LastIndexByte(shown, '\n'); i >= 0 {
				orig[name] = shown[:i]
			}
		}
	}
	files := map[string]string{}
	for k, v := range orig {
		files[k] = v
	}
	target := map[string]string{"[USER] ": "USER.md", "[SOUL] ": "SOUL.md", "[MEMORY] ": "memory/MEMORY.md"}
	named := namedLines(findings)
	for _, line := range strings.Split(findings, "\n") {
		tag, fact, ok := findingFact(line)
		if !ok {
			continue
		}
		if tag == "[FILE-REMOVE] " {
			for name, text := range files {
				var kept []string
				for _, l := range strings.Split(text, "\n") {
					if !strings.Contains(strings.ToLower(l), strings.ToLower(fact)) {
						kept = append(kept, l)
					}
				}
				files[name] = strings.Join(kept, "\n")
			}
			continue
		}
		name := target[tag]
		if ids := findingReplaces(line); ids != nil {
			replaceLines(files, name, ids, named, "- "+fact+" <!-- replaces:"+strings.Join(ids, ",")+" -->")
			continue
		}
		if hasFact(files[name], fact) {
			continue
		}
		if files[name] == "" {
			files[name] = "- " + fact
		} else {
			files[name] += "\n- " + fact
		}
	}
	var calls []llm.ToolCall
	for _, name := range order {
		if files[name] == orig[name] {
			continue
		}
		oldText, newText := narrowEdit(orig[name], files[name])
		args, _ := json.Marshal(map[string]string{"path": name, "old_text": oldText, "new_text": newText})
		calls = append(calls, llm.ToolCall{Name: "edit_file", Arguments: string(args)})
	}
	if len(calls) == 0 {
		return Text("Nothing to change.")
	}
	return Reply{ToolCalls: calls}
}

// namedRe is a line of the editing prompt's list of lines without an id
// in their file: "[id:7f3a] in USER.md: - Ana lives in Lisbon.".
var namedRe = regexp.MustCompile(`(?m)^\[id:([0-9a-z]+)\] in (\S+): (.*)$`)

// namedLines are the lines that list names, by file: the line as the file
// holds it -> its id.
func namedLines(prompt string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, m := range namedRe.FindAllStringSubmatch(prompt, -1) {
		if out[m[2]] == nil {
			out[m[2]] = map[string]string{}
		}
		out[m[2]][m[3]] = m[1]
	}
	return out
}

// replaceLines puts line in place of the first line of files with one of
// ids (in its comment, or as named says), deleting the others; when no
// file holds one, it is appended to the file name.
func replaceLines(files map[string]string, name string, ids []string, named map[string]map[string]string, line string) {
	placed := false
	for _, n := range sortedKeys(files) {
		var kept []string
		for _, l := range strings.Split(files[n], "\n") {
			ml, ok := memline.Parse(l)
			if ok && ml.ID == "" {
				ml.ID = named[n][l]
			}
			if ok && ml.ID != "" && slicesContains(ids, ml.ID) {
				if !placed {
					kept, placed = append(kept, line), true
				}
				continue
			}
			kept = append(kept, l)
		}
		files[n] = strings.Join(kept, "\n")
	}
	if placed {
		return
	}
	if files[name] == "" {
		files[name] = line
	} else {
		files[name] += "\n" + line
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// narrowEdit is the smallest edit_file turning before into after that a
// careful model would send: the lines that differ, with the line before
// them when they are only added, provided that text is found once in
// before; else the whole text. (Whole files grow each edit's tokens with
// the memory, and months of memory made Dream's calls slow.)
func narrowEdit(before, after string) (oldText, newText string) {
	p := 0
	for p < len(before) && p < len(after) && before[p] == after[p] {
		p++
	}
	q := 0
	for q < len(before)-p && q < len(after)-p && before[len(before)-1-q] == after[len(after)-1-q] {
		q++
	}
	// Whole lines: start after a line break, end before one.
	p = strings.LastIndexByte(before[:p], '\n') + 1
	if i := strings.IndexByte(before[len(before)-q:], '\n'); i >= 0 {
		q -= i
	} else {
		q = 0
	}
	if p == len(before)-q && p > 0 { // only added: anchor on the line before
		p = strings.LastIndexByte(before[:p-1], '\n') + 1
	}
	oldText, newText = before[p:len(before)-q], after[p:len(after)-q]
	if oldText == "" || strings.Count(before, oldText) != 1 {
		return before, after
	}
	return oldText, newText
}

// takeRunes returns the first n runes of s.
func takeRunes(s string, n int) string {
	end := 0
	for i := 0; i < n && end < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	return s[:end]
}

// deepFactRe is one numbered fact of a deep Dream request.
var deepFactRe = regexp.MustCompile(`^([A-Z][0-9]+) \[(permanent|durable|ephemeral) ([0-9-]+|undated)\] (.+)$`)

// deepMustRe is the firm request of a deep Dream's second pass.
var deepMustRe = regexp.MustCompile(`This pass must free at least [0-9]+ tokens \(about ([0-9]+) facts\)`)

type deepFact struct {
	id, prio, date, text string
}

// deepGroupOp is the operation for facts grouped as one ("" for a single
// fact): the same text merges into the one confirmed last; a fact the
// same but for its last word (a correction) is replaced by the one
// confirmed last.
func deepGroupOp(fs []deepFact) string {
	if len(fs) < 2 {
		return ""
	}
	newest := fs[0]
	same := true
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
		if f.date >= newest.date {
			newest = f
		}
		same = same && memline.Key(f.text) == memline.Key(fs[0].text)
	}
	if same {
		return "MERGE " + strings.Join(ids, " ") + ": " + newest.text
	}
	var older []string
	for _, id := range ids {
		if id != newest.id {
			older = append(older, id)
		}
	}
	return "REPLACE " + strings.Join(older, " ") + " WITH " + newest.id
}

// memDeep answers a deep Dream request by MemoryModel's rules.
func memDeep(prompt string) string {
	var facts []deepFact
	for _, line := range strings.Split(prompt, "\n") {
		if m := deepFactRe.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			date := m[3]
			if date == "undated" {
				date = ""
			}
			facts = append(facts, deepFact{id: m[1], prio: m[2], date: date, text: m[4]})
		}
	}
	// Group the facts: the same key, or the same words but the last.
	group := func(f deepFact) string {
		k := memline.Key(f.text)
		if w := strings.Fields(k); len(w) >= 4 {
			return strings.Join(w[:len(w)-1], " ")
		}
		return k
	}
	var order []string
	groups := map[string][]deepFact{}
	for _, f := range facts {
		g := group(f)
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], f)
	}
	var out []string
	merged := map[string]bool{}
	for _, g := range order {
		if op := deepGroupOp(groups[g]); op != "" {
			out = append(out, op)
			for _, f := range groups[g] {
				merged[f.id] = true
			}
		}
	}
	if m := deepMustRe.FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		var cands []deepFact
		for _, f := range facts {
			if !merged[f.id] && f.prio != "permanent" && !strings.HasPrefix(f.id, "S") {
				cands = append(cands, f)
			}
		}
		rank := map[string]int{"ephemeral": 0, "durable": 1}
		sort.SliceStable(cands, func(i, j int) bool {
			if rank[cands[i].prio] != rank[cands[j].prio] {
				return rank[cands[i].prio] < rank[cands[j].prio]
			}
			return cands[i].date < cands[j].date
		})
		var ids []string
		for _, f := range cands[:min(n, len(cands))] {
			ids = append(ids, f.id)
		}
		if len(ids) > 0 {
			out = append(out, "MOVE "+strings.Join(ids, " "))
		}
	}
	if len(out) == 0 {
		return "DONE"
	}
	return strings.Join(out, "\n")
}
