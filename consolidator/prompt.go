package consolidator

import (
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
)

// Prompt is the part of a turn's prompt that the budget counts besides the
// session's messages. The gateway builds Fixed and Tools; the consolidator
// renders History. The system prompt is Fixed + History. What the gateway
// adds to the messages it replays — the runtime header (time, channel,
// sender) on the newest one, a sender's name on each from a chat platform
// — is a few tokens, never counted per turn: the safety margin holds it,
// Status adds an allowance, and a provider's count of the prompt, which
// includes it, raises the floor.
type Prompt struct {
	// Fixed opens the system prompt: identity and the workspace files
	// (AGENTS, SOUL, USER, MEMORY). It changes only when a file does, so
	// it leads, for providers' prompt caches.
	Fixed string
	// History is this session's "Recent history" block and its last
	// archive summary, each under its heading; "" when there is neither.
	// Before and After fill it in; what the caller sets is replaced.
	History string
	// Tools is the tool definitions as text: they are sent beside the
	// system prompt on every call and cost tokens like it.
	Tools string
	// Kept is how many messages before the session's LastConsolidated the
	// prompt replays: the continuity window, the last messages of the
	// conversation kept in view after they were archived, so that an
	// archive (idle, or by budget) does not cut the live conversation off.
	// They are archived already and never archived again. The prompt
	// replays the session from LastConsolidated - Kept, a user message.
	// Before and After set it (0: none); what the caller sets is replaced.
	Kept int
}

// System is the stable system prompt: Fixed, then History, then, when the
// prompt keeps archived messages in view, a note saying so.
func (p Prompt) System() string {
	if p.Kept > 0 {
		return p.Fixed + p.History + continuityNote
	}
	return p.Fixed + p.History
}

// counted is what the budget counts besides the messages, as one message.
func (p Prompt) counted() string { return p.System() + p.Tools }

// base is counted without the continuity note, which the budget adds
// only when it keeps a window.
func (p Prompt) base() string { return p.Fixed + p.History + p.Tools }

// Headings of the consolidator's part of the system prompt.
const (
	recentHeading  = "\n\n# Recent history\n\nNotes archived from earlier exchanges in this chat, not yet folded into long-term memory:\n\n"
	summaryHeading = "\n\n# Last archive summary of this conversation\n\n"
	// continuityNote follows them when the conversation replayed after the
	// system prompt opens with messages that are archived already; it says
	// only what is true of them (they were archived, not that they are
	// remembered anywhere in particular).
	continuityNote = "\n\n(The conversation below opens with its last messages from before an archive: they are archived already and shown again so that the conversation reads on.)"
)

// render fills in p.History for s: the Recent history block (see
// recentHistory) and the last archive summary, unless the block already
// shows it. A history that cannot be read is left out with a warning: the
// turn goes on without it rather than fail.
func (c *Consolidator) render(s Session, p Prompt) Prompt {
	recent, err := c.recentHistory(s)
	if err != nil {
		c.logger.Warn("recent history unavailable for prompt", "session", s.Key(), "err", err)
		recent = ""
	}
	var b strings.Builder
	if recent != "" {
		b.WriteString(recentHeading)
		b.WriteString(recent)
	}
	if sum := strings.TrimSpace(s.LastSummary()); sum != "" && !strings.Contains(recent, sum) {
		b.WriteString(summaryHeading)
		b.WriteString(sum)
	}
	p.History = b.String()
	return p
}

// Limits of the Recent history block: the session's newest entries Dream
// has not read yet, at most 50 of them and 8K tokens.
const (
	recentMaxEntries = 50
	recentMaxTokens  = 8000
)

// recentHistory is the body of a session's "Recent history" block: its
// entries Dream has not read yet into their scope's memory (Config.Folded), of the newest 50 those of a scope its
// audience may read (a conversation whose audience changed keeps its
// earlier entries under its earlier scope), as many of those as fit in 8K
// tokens, oldest first, one "- [timestamp] content" item each. "" when
// there are none.
func (c *Consolidator) recentHistory(s Session) (string, error) {
	all, err := c.store.UnreadLast(s.Key(), recentMaxEntries)
	if err != nil {
		return "", fmt.Errorf("recent history: %w", err)
	}
	entries := all[:0:0]
	folded := c.foldedUpTo()
	for _, e := range all {
		if c.readable(s, e.Scope) && e.Cursor > folded(e.Scope) {
			entries = append(entries, e)
		}
	}
	lines := make([]string, len(entries))
	total := 0
	for i, e := range entries {
		lines[i] = "- [" + e.Timestamp + "] " + e.Content
		total += len(lines[i]) + 1
	}
	if total <= recentMaxTokens {
		return strings.Join(lines, "\n"), nil
	}
	first, used := len(lines), 0
	counts := c.recentLineCounts(entries, lines)
	for i := len(lines) - 1; i >= 0; i-- {
		n := counts[i] + 1
		if used+n > recentMaxTokens {
			break
		}
		used += n
		first = i
	}
	if first == len(lines) {
		// The newest entry alone is too long: show its beginning, marked.
		last := lines[len(lines)-1]
		return cutToBytes(last, recentMaxTokens, recentCutNote), nil
	}
	return strings.Join(lines[first:], "\n"), nil
}

// foldedUpTo returns each scope's Dream cursor as Config.Folded says, read
// once a scope for the prompt; 0 (all unread) without Folded or when it
// cannot say, so that an entry is never hidden on a guess.
func (c *Consolidator) foldedUpTo() func(audience.Scope) int {
	if c.cfg.Folded == nil {
		return func(audience.Scope) int { return 0 }
	}
	seen := map[audience.Scope]int{}
	return func(s audience.Scope) int {
		if n, ok := seen[s]; ok {
			return n
		}
		n, err := c.cfg.Folded.Cursor(s)
		if err != nil {
			c.logger.Warn("how far Dream read a scope is unknown; its Recent history shows every entry past the frontier", "err", err)
			n = 0
		}
		seen[s] = n
		return n
	}
}

// recentCountsCap bounds the cache of Recent history line counts: when it
// is reached, only the lines of the current call are kept.
const recentCountsCap = 4096

// recentLineCounts returns the token count of each line, counting only
// lines not seen before.
func (c *Consolidator) recentLineCounts(entries []history.Entry, lines []string) []int {
	c.recentMu.Lock()
	defer c.recentMu.Unlock()
	if c.recentCounts == nil || len(c.recentCounts) >= recentCountsCap {
		old := c.recentCounts
		c.recentCounts = make(map[int]int, len(lines))
		for _, e := range entries {
			if n, ok := old[e.Cursor]; ok {
				c.recentCounts[e.Cursor] = n
			}
		}
	}
	counts := make([]int, len(lines))
	for i, e := range entries {
		n, ok := c.recentCounts[e.Cursor]
		if !ok {
			n = c.counter.Count(lines[i])
			c.recentCounts[e.Cursor] = n
		}
		counts[i] = n
	}
	return counts
}
