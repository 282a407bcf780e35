package llmtest

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// recallTool is the chat tool that searches what memory no longer shows
// (package recall's ToolName).
const recallTool = "recall"

// maxRecallWords is the most words (as words counts them) of a question
// the fake searches for.
const maxRecallWords = 8

func memChat(r Request) Reply {
	last := r.Messages[len(r.Messages)-1]
	if last.Role == llm.RoleTool {
		if toolNameOf(r.Messages, last.ToolCallID) == recallTool {
			return Text(recallAnswer(last.Content, Spoken(lastOfRole(r.Messages, llm.RoleUser))))
		}
		first, _, _ := strings.Cut(strings.TrimSpace(last.Content), "\n")
		return Text("It says: " + first)
	}
	msg := Spoken(last.Content)
	if strings.Contains(strings.ToLower(msg), "read") {
		for _, w := range strings.Fields(msg) {
			w = strings.Trim(w, ".,;:!?\"'()")
			if strings.Contains(w, "/") || strings.HasSuffix(w, ".txt") || strings.HasSuffix(w, ".md") {
				args, _ := json.Marshal(map[string]string{"path": w})
				return ToolCall("read_file", string(args))
			}
		}
	}
	if strings.HasSuffix(strings.TrimSpace(msg), "?") && len(r.Messages) > 0 && r.Messages[0].Role == llm.RoleSystem {
		answer, whole := memAnswerWhole(r.Messages[0].Content, msg)
		// A short, direct question the memory shown does not answer is
		// searched for; small talk that happens to end in "?" is not.
		if !whole && len(words(msg)) <= maxRecallWords && slicesContains(r.Tools, recallTool) {
			args, _ := json.Marshal(map[string]string{"query": strings.Join(sortedWords(msg), " ")})
			return ToolCall(recallTool, string(args))
		}
		return Text(answer)
	}
	return Text("Got it.")
}

// Spoken is what the person wrote in a chat turn's user message: its
// content without the gateway's runtime header ("[Now: …]" and a blank
// line, on the turn's newest message) and sender name ("[Ana] ", on a
// message from a chat platform), which say when and who, not what about.
func Spoken(content string) string {
	if rest, ok := strings.CutPrefix(content, "[Now: "); ok {
		if _, after, ok := strings.Cut(rest, "]\n\n"); ok {
			content = after
		}
	}
	if strings.HasPrefix(content, "[") {
		if i := strings.Index(content, "] "); i > 0 && !strings.ContainsAny(content[:i], "\n") {
			content = content[i+2:]
		}
	}
	return content
}

var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "you": true, "your": true, "are": true, "was": true,
	"what": true, "where": true, "who": true, "does": true, "did": true, "how": true, "which": true,
	"with": true, "that": true, "this": true, "have": true, "has": true, "about": true, "tell": true,
	"know": true, "any": true, "should": true, "when": true,
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) >= 3 && !stopWords[w] {
			out[stem(w)] = true
		}
	}
	return out
}

// stem folds a plural or third-person "s" ("leaves", "leave"), so that a
// question and the line answering it share their words as a reader sees.
func stem(w string) string {
	if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

// memAnswer picks the memory line that best matches the question.
func memAnswer(system, question string) string {
	answer, _ := memAnswerWhole(system, question)
	return answer
}

// memAnswerWhole is memAnswer, and whether the line holds every word of
// the question: when none does and the recall tool is offered, the model
// searches with it, as its description asks ("when something asked about
// is not in the memory shown").
func memAnswerWhole(system, question string) (string, bool) {
	// The memory files start at the first scope's heading in the prompt of
	// an audience other than the operator's, else at the operator's first
	// file.
	for _, start := range []string{"\n# Memory", "\n# Soul"} {
		if i := strings.Index(system, start); i >= 0 {
			system = system[i:]
			break
		}
	}
	for _, end := range []string{"\n# Recent history", "\n# Last archive summary"} {
		if i := strings.Index(system, end); i >= 0 {
			system = system[:i]
		}
	}
	q := words(question)
	best, score := "", 0
	for _, line := range strings.Split(system, "\n") {
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		if l, ok := memline.Parse(line); ok {
			line = "- " + l.Text // without a metadata comment
		}
		n := 0
		for w := range words(line) {
			if q[w] {
				n++
			}
		}
		if n > score {
			best, score = strings.TrimPrefix(line, "- "), n
		}
	}
	if best == "" {
		return "I don't know.", false
	}
	return best, score == len(q)
}

// recallAnswer answers question from a recall result: the text of its
// match sharing the most words with the question, or "I don't know.".
func recallAnswer(result, question string) string {
	q := words(question)
	best, score := "", 0
	for _, line := range strings.Split(result, "\n") {
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		// "- when, where: text"
		_, text, ok := strings.Cut(line, ": ")
		if !ok || strings.HasSuffix(strings.TrimSpace(text), "?") {
			continue // a question asked before answers nothing
		}
		n := 0
		for w := range words(text) {
			if q[w] {
				n++
			}
		}
		if n > score {
			best, score = text, n
		}
	}
	if best == "" {
		return "I don't know."
	}
	return "I found: " + strings.TrimPrefix(best, "- ")
}

// sortedWords are the question's words that words keeps, in its order.
func sortedWords(s string) []string {
	keep := words(s)
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if keep[stem(w)] {
			out = append(out, w)
			delete(keep, stem(w))
		}
	}
	return out
}

// toolNameOf is the name of the tool call id in msgs.
func toolNameOf(msgs []llm.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID == id {
				return tc.Name
			}
		}
	}
	return ""
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
