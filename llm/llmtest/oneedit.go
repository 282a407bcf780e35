package llmtest

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/llm"
)

// OneEditModel answers dreamgate's memory pipeline by fixed rules, as
// MemoryModel does, but edits the way small local models often do: one
// edit_file call per model call, so a Dream with many findings needs many
// calls. Corrections are replacements. Use it as a responder:
// srv.SetResponder(OneEditModel).
//
//   - Archive call: as MemoryModel, one "- " line per stated sentence of a
//     USER or TOOL line of the transcript.
//   - Dream analysis: each archived "- " line becomes one finding. A
//     correction, "Actually, X, not Y.", becomes the finding "X." with the
//     suffix " (instead of Y)". The tag is [SOUL] when the fact says "you"
//     or "please", [USER] when it says "I", "I'm" or "my", else [MEMORY].
//     It never looks at what the files already hold: what reaches it twice
//     is proposed twice.
//   - Dream editing: the findings are applied in order to the files shown
//     in the prompt, as if every edit_file call earlier in the
//     conversation that succeeded had been made; the reply is the next
//     edit of that sequence, a single edit_file call, or "Done." when no
//     edit is left. A fact is appended after the file's last line unless
//     the file has a line stating it already (whatever its metadata
//     comment); a finding "… (instead of Y)"
//     replaces the line of its file that holds Y, or is appended when none
//     does.
//   - Chat turn: as MemoryModel.
func OneEditModel(r Request) Reply { return pipelineReply(r, oneAnalyse, oneEdit) }

// InsteadOf marks the finding of a correction: "<fact> (instead of <old>)".
const InsteadOf = " (instead of "

var (
	correctionRe = regexp.MustCompile(`^Actually, (.+), not (.+?)[.!]?$`)
	oneUserRe    = regexp.MustCompile(`\bI\b|\bI'm\b|(?i:\bmy\b)`)
)

func oneAnalyse(prompt string) string {
	var out []string
	for _, fact := range historyFacts(prompt) {
		suffix := ""
		if m := correctionRe.FindStringSubmatch(fact); m != nil {
			fact = upperFirst(m[1]) + "."
			suffix = InsteadOf + m[2] + ")"
		}
		tag := "[MEMORY] "
		switch {
		case soulRe.MatchString(fact):
			tag = "[SOUL] "
		case oneUserRe.MatchString(fact):
			tag = "[USER] "
		}
		out = append(out, tag+fact+suffix)
	}
	if len(out) == 0 {
		return "[SKIP]"
	}
	return strings.Join(out, "\n")
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// oneEditCall is one edit_file call's arguments.
type oneEditCall struct {
	Path    string `json:"path"`
	OldText string `json:"old_text"`
	NewText string `json:"new_text"`
}

func oneEdit(r Request, prompt string) Reply {
	findings, filesPart, _ := strings.Cut(prompt, "\n## Current memory files")
	files := map[string]string{}
	for _, m := range fileHeader.FindAllStringSubmatchIndex(filesPart, -1) {
		n, _ := strconv.Atoi(filesPart[m[4]:m[5]])
		files[filesPart[m[2]:m[3]]] = takeRunes(filesPart[m[1]:], n)
	}
	edits := planEdits(findings, files)
	done := succeededEdits(r.Messages)
	if done >= len(edits) {
		return Text("Done.")
	}
	args, _ := json.Marshal(edits[done])
	return ToolCall("edit_file", string(args))
}

// planEdits is the whole sequence of single edits that applies findings
// to files, in order; files is changed as it goes.
func planEdits(findings string, files map[string]string) []oneEditCall {
	target := map[string]string{"[USER] ": "USER.md", "[SOUL] ": "SOUL.md", "[MEMORY] ": "memory/MEMORY.md"}
	var edits []oneEditCall
	for _, line := range strings.Split(findings, "\n") {
		for tag, name := range target {
			t, fact, ok := findingFact(line)
			if !ok || t != tag {
				continue
			}
			old := ""
			if i := strings.LastIndex(fact, InsteadOf); i >= 0 && strings.HasSuffix(fact, ")") {
				fact, old = fact[:i], fact[i+len(InsteadOf):len(fact)-1]
			}
			if e, ok := oneEditFor(name, files[name], "- "+fact, old); ok {
				edits = append(edits, e)
				files[name] = applyEdit(files[name], e)
			}
		}
	}
	return edits
}

// oneEditFor is the edit that puts line into text, replacing the line that
// holds old when old is set; ok is false when nothing needs to change.
func oneEditFor(name, text, line, old string) (oneEditCall, bool) {
	lines := strings.Split(text, "\n")
	if old != "" {
		for _, l := range lines {
			if strings.Contains(l, old) && strings.Count(text, l) == 1 {
				return oneEditCall{Path: name, OldText: l, NewText: line}, true
			}
		}
	}
	if hasFact(text, strings.TrimPrefix(line, "- ")) {
		return oneEditCall{}, false
	}
	if strings.TrimSpace(text) == "" {
		return oneEditCall{Path: name, OldText: "", NewText: line + "\n"}, true
	}
	last := lines[len(lines)-1]
	if strings.TrimSpace(last) == "" || strings.Count(text, last) != 1 {
		last = text // the whole file occurs exactly once
	}
	return oneEditCall{Path: name, OldText: last, NewText: last + "\n" + line}, true
}

func applyEdit(text string, e oneEditCall) string {
	if e.OldText == "" {
		return e.NewText
	}
	return strings.Replace(text, e.OldText, e.NewText, 1)
}

// succeededEdits counts the edit_file calls of the conversation whose
// result reports a change.
func succeededEdits(msgs []llm.Message) int {
	ids := map[string]bool{}
	for _, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, tc := range m.ToolCalls {
			if tc.Name == "edit_file" {
				ids[tc.ID] = true
			}
		}
	}
	n := 0
	for _, m := range msgs {
		if m.Role != llm.RoleTool || !ids[m.ToolCallID] {
			continue
		}
		for _, ok := range []string{"Edited ", "Created ", "Filled the empty "} {
			if strings.HasPrefix(m.Content, ok) {
				n++
				break
			}
		}
	}
	return n
}
