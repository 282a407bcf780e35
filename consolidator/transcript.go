package consolidator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
)

// Caps on archive entries, in characters (Unicode code points, as nanobot
// counts them); history.Store applies its own, larger, hard cap.
const (
	// MaxSummaryChars caps an archive summary.
	MaxSummaryChars = 8000
	// MaxRawChars caps a "[RAW] N messages" entry.
	MaxRawChars = 16000
)

// truncatedSuffix marks an archive entry cut to its cap, as nanobot marks
// one.
const truncatedSuffix = history.TruncatedSuffix

// Limits on what one message contributes to an archive transcript.
const (
	// maxToolResultChars: a tool result is evidence, but a file dump is
	// not worth more than this.
	maxToolResultChars = 4000
	// maxToolArgsChars caps the rendered arguments of one tool call.
	maxToolArgsChars = 1000
	// maxRawLineChars caps the first line of a message in a [RAW] entry.
	maxRawLineChars = 300
)

// archivePrompt is the system prompt of an archive call. It asks for facts
// grounded in evidence (what the user said, what tools returned) rather than
// in the assistant's account of its own actions: memories formed from an
// agent's narration of itself repeat its claims, true or not.
const archivePrompt = `You keep the long-term archive of a chat between a user (or a team) and an AI assistant. You get part of the conversation as a transcript. Write down what will still matter weeks from now.

Output rules:
- One fact per line, each line starting with "- ". No headings, no preamble, nothing else.
- Corrections come first: when the user corrected a fact, a preference or a mistake, write the corrected version and say what it replaces.
- Then, in this order: preferences and stable facts about the people, decisions, solutions that worked, notable events (with dates), project context.
- A USER line may name who wrote it, as "USER (Ana):". In a conversation with several people, say whose preference or fact it is by that name; never give one person's words to another.
- Use evidence: what the user wrote and what tool results (TOOL lines) showed. What the assistant says it did or found is not evidence; keep such a claim only when a tool result confirms it. Never record that something was saved, sent or changed unless a tool result shows it.
- Leave out small talk, passing task chatter, and anything that can simply be re-read from files or repositories.
- Be specific and brief: names, numbers, paths, dates.
- If nothing is worth keeping, answer exactly: (nothing)`

// nothingAnswer is the whole answer that means "no entry".
const nothingAnswer = "(nothing)"

// stamp formats a message time for transcripts, in the same local time as
// history.jsonl timestamps; "" when unknown.
func stamp(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return "[" + t.In(loc).Format(history.TimestampLayout) + "] "
}

// renderMessage writes one message as a transcript line:
//
//	[2026-04-03 00:02] USER: …
//	[2026-04-03 00:02] ASSISTANT [calls read_file(path=USER.md)]: …
//	[2026-04-03 00:02] TOOL read_file: <result, cut to 4K chars>
func renderMessage(m llm.Message, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(stamp(m.Time, loc))
	switch m.Role {
	case llm.RoleTool:
		b.WriteString("TOOL")
		if m.Name != "" {
			b.WriteString(" " + m.Name)
		}
		b.WriteString(": ")
		content, _ := textcut.Chars(m.Content, maxToolResultChars, "\n... (result cut: "+textcut.Count+" more characters)")
		b.WriteString(content)
		return b.String()
	case "":
		b.WriteString("UNKNOWN")
	default:
		b.WriteString(strings.ToUpper(m.Role))
		if name := m.SenderLabel(); name != "" && m.Role == llm.RoleUser {
			b.WriteString(" (" + name + ")")
		}
	}
	if len(m.ToolCalls) > 0 {
		b.WriteString(" [calls ")
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tc.Name)
			b.WriteString("(")
			b.WriteString(renderArgs(tc.Arguments))
			b.WriteString(")")
		}
		b.WriteString("]")
	}
	content := spoken(m)
	if n := len(m.Images); n > 0 {
		// The archive model reads text: name the images it is not given
		// (a session's record names them in the content already).
		content = strings.TrimSpace(content + fmt.Sprintf("\n[%d image(s) sent with this message; not in the transcript]", n))
	}
	if content != "" || len(m.ToolCalls) == 0 {
		b.WriteString(": ")
		b.WriteString(content)
	}
	return b.String()
}

// spoken is a message's content as the archive may see it: an assistant's
// leaked reasoning is the model talking to itself, not evidence, and never
// reaches history.jsonl (tool results and user text are left as they are).
func spoken(m llm.Message) string {
	if m.Role == llm.RoleAssistant {
		return StripReasoning(m.Content)
	}
	return strings.TrimSpace(m.Content)
}

// renderArgs turns {"path":"USER.md","n":2} into path=USER.md, n=2, keeping
// the model's key order; anything else is shown as it came.
func renderArgs(raw string) string {
	out, ok := argsKeyValues(raw)
	if !ok {
		out = strings.TrimSpace(raw)
	}
	out, _ = textcut.Chars(out, maxToolArgsChars, "…")
	return out
}

func argsKeyValues(raw string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var b strings.Builder
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, ok := t.(string)
		if !ok {
			return "", false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(key)
		b.WriteString("=")
		var s string
		if json.Unmarshal(v, &s) == nil {
			b.WriteString(s)
		} else {
			b.Write(compactJSON(v))
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false
	}
	return b.String(), true
}

func compactJSON(v []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v
	}
	return buf.Bytes()
}

// rawEntry is the fallback archive of messages the model could not
// summarize: a header and one line per message (time, role, tool, first line
// of content), capped at MaxRawChars. The full messages stay in the session.
func rawEntry(msgs []llm.Message, loc *time.Location) string {
	var b strings.Builder
	b.WriteString("[RAW] " + strconv.Itoa(len(msgs)) + " messages")
	for _, m := range msgs {
		b.WriteString("\n")
		b.WriteString(stamp(m.Time, loc))
		role := strings.ToUpper(m.Role)
		if role == "" {
			role = "UNKNOWN"
		}
		b.WriteString(role)
		if m.Role == llm.RoleTool && m.Name != "" {
			b.WriteString(" " + m.Name)
		}
		if len(m.ToolCalls) > 0 {
			names := make([]string, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				names[i] = tc.Name
			}
			b.WriteString(" [calls " + strings.Join(names, ", ") + "]")
		}
		first, _, _ := strings.Cut(spoken(m), "\n")
		first, _ = textcut.Chars(first, maxRawLineChars, "…")
		if first != "" || len(m.ToolCalls) == 0 {
			b.WriteString(": " + first)
		}
	}
	out, _ := textcut.Chars(b.String(), MaxRawChars, truncatedSuffix)
	return out
}

// cleanAnswer is an archive answer without leaked reasoning.
func cleanAnswer(s string) string { return StripReasoning(s) }

// isNothing reports whether an answer means "nothing worth keeping".
func isNothing(s string) bool {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "."))
	s = strings.TrimSpace(strings.TrimPrefix(s, "- "))
	return strings.EqualFold(s, nothingAnswer)
}

// Notes left where a line too large for its place was cut (textcut.Count
// stands for the characters left out); each says what is true where it
// stands: no text the model sees may claim what did not happen.
const (
	// archiveCutNote: a transcript line too large for one archive call.
	archiveCutNote = "\n... (message cut here: " + textcut.Count + " more characters did not fit in one archive request)"
	// recentCutNote: a Recent history entry too large for the block.
	recentCutNote = "\n... (entry cut here: " + textcut.Count + " more characters not shown)"
)

// cutToBytes shortens a line to at most maxBytes, note included (bytes
// bound the tokens of any tokenizer), ending it with note: the reader must
// know it did not see the whole text.
func cutToBytes(line string, maxBytes int, note string) string {
	cut, _ := textcut.Limit{Max: maxBytes, Bytes: true, Mark: note, MarkWithin: true}.Cut(line)
	return cut
}
