package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
)

// ToolName is the chat tool's name.
const ToolName = "recall"

// Searcher is what the tool searches: *Index.
type Searcher interface {
	Search(ctx context.Context, query string, readable []audience.Scope, limit int) (Results, error)
}

// Tool returns the chat tool that searches s within the readable scopes
// alone: the scopes of the turn's audience, fixed when the turn builds its
// tools. Nothing the model sends can name another scope. label says whose
// a match's scope is, for the turn's audience (memory.Memory.Label); nil
// names it (memory.Name).
func Tool(s Searcher, readable []audience.Scope, label func(audience.Scope) string) agent.Tool {
	if label == nil {
		label = memory.Name
	}
	return &tool{s: s, readable: append([]audience.Scope(nil), readable...), label: label}
}

type tool struct {
	s        Searcher
	readable []audience.Scope
	label    func(audience.Scope) string
}

// The definition is sent with every chat request: it is kept short.
const toolParams = `{"type":"object","properties":{"query":{"type":"string","description":"words to find"},` +
	`"limit":{"type":"integer","description":"at most this many matches (default 10, at most 50)"}},"required":["query"]}`

func (t *tool) Def() llm.ToolDef {
	return llm.ToolDef{
		Name: ToolName,
		Description: "Search what was said before that this conversation may see (earlier messages, the archive, " +
			"cold memory) when something asked about is not in the memory shown; returns matches with when and where.",
		Parameters: json.RawMessage(toolParams),
	}
}

func (t *tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", fmt.Errorf("arguments must be a JSON object with a string query and an optional integer limit")
	}
	if strings.TrimSpace(in.Query) == "" {
		return "", fmt.Errorf("query is empty: give the words to look for")
	}
	if len(Terms(in.Query)) == 0 {
		return fmt.Sprintf("Nothing to search for in %q: the query has no words.", in.Query), nil
	}
	res, err := t.s.Search(ctx, in.Query, t.readable, in.Limit)
	if errors.Is(err, ErrUnavailable) {
		return "", errors.New("the search index is being rebuilt; try again in a few minutes")
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", errors.New("the search failed; try again later")
	}
	var label func(audience.Scope) string
	if len(t.readable) > 1 {
		label = t.label
	}
	return formatResults(in.Query, res, label), nil
}

// maxResultChars bounds the tool's answer, whole match lines only: the
// result stays in the conversation and costs tokens every turn after, and
// the archive cuts a longer tool result mid-line (its transcript keeps
// 4,000 characters of one), which would leave a fact without its value in
// history — to be found again by the next search as if it were the fact.
const maxResultChars = 3500

// formatResults writes one short line per match: when, where, the text;
// the best first, as many as fit in maxResultChars. label, when the
// conversation reads several scopes, adds whose each match's is.
func formatResults(query string, res Results, label func(audience.Scope) string) string {
	var b strings.Builder
	if len(res.Matches) == 0 {
		fmt.Fprintf(&b, "Nothing found for %q in what this conversation may see.", query)
	} else {
		q := query
		if utf8.RuneCountInString(q) > 200 {
			q = string([]rune(q)[:200]) + "…"
		}
		lines := make([]string, 0, len(res.Matches))
		size := 0
		for _, m := range res.Matches {
			line := matchLine(m, label)
			n := utf8.RuneCountInString(line) + 1
			if len(lines) > 0 && size+n > maxResultChars-300 {
				break // the header and the notes take the rest
			}
			lines = append(lines, line)
			size += n
		}
		fmt.Fprintf(&b, "%d found for %q, best first:\n", len(res.Matches), q)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\n")
		}
		if left := len(res.Matches) - len(lines); left > 0 {
			fmt.Fprintf(&b, "(%d more not shown, to keep this short: search with more words to narrow it.)\n", left)
		}
	}
	if res.Incomplete {
		b.WriteString("\n(The search index is still being built: older conversations may not be found yet.)")
	}
	return strings.TrimRight(b.String(), "\n")
}

// matchLine is "- when, where [whose]: text".
func matchLine(m Match, label func(audience.Scope) string) string {
	var b strings.Builder
	b.WriteString("- ")
	if !m.Time.IsZero() {
		b.WriteString(m.Time.Format("2006-01-02 15:04"))
	} else {
		b.WriteString("undated")
	}
	b.WriteString(", ")
	b.WriteString(where(m))
	if label != nil {
		b.WriteString(" [")
		b.WriteString(label(m.Scope))
		b.WriteString("]")
	}
	b.WriteString(": ")
	b.WriteString(m.Text)
	return b.String()
}

func where(m Match) string {
	switch m.Kind {
	case KindMessage:
		return fmt.Sprintf("%s in conversation %s (message %d)", m.Who, m.Conversation, m.Index)
	case KindHistory:
		if m.Conversation != "" {
			return fmt.Sprintf("archive entry %d from conversation %s", m.Cursor, m.Conversation)
		}
		return fmt.Sprintf("archive entry %d", m.Cursor)
	case KindCold:
		return fmt.Sprintf("cold memory line %d", m.Line)
	}
	return "unknown"
}
