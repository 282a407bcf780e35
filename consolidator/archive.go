package consolidator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
)

// ArchiveTail archives everything from LastConsolidated to the end of s,
// whatever the budget: for idle sessions and /new. Messages appended while
// it runs are left for later. Outcomes and errors are as for Before; the
// report's Before and After stay 0.
func (c *Consolidator) ArchiveTail(ctx context.Context, s Session) (Report, error) {
	var rep Report
	unlock, err := c.lockSession(ctx, s)
	if err != nil {
		return rep, err
	}
	defer unlock()
	st := c.state(s.ID())
	base, msgs, lc := held(s)
	if lc >= len(msgs) {
		return rep, nil
	}
	rep.Rounds = 1
	if _, err := c.archive(ctx, s, st, base, msgs, lc, len(msgs), &rep); err != nil {
		return rep, err
	}
	c.logger.Info("archived session tail", "session", s.Key(), "messages", rep.Archived,
		"entries", len(rep.Entries), "raw", rep.Raw)
	return rep, nil
}

// archive archives msgs[from:to] as one or more entries (more when the
// transcript is too large for one call) and advances LastConsolidated after
// each. It reports whether it fell back to raw. msgs[i] is the session's
// message base+i: entries and LastConsolidated record base+i.
//
// Messages from `from` on that history already holds (see skipArchived) are not
// archived again: LastConsolidated moves past them first.
func (c *Consolidator) archive(ctx context.Context, s Session, st *sessionCounts, base int, msgs []llm.Message, from, to int, rep *Report) (bool, error) {
	log := c.logger.With("session", s.Key())
	from, err := c.skipArchived(s, base, msgs, from, rep)
	if err != nil || from >= to {
		return false, err
	}
	st.mu.Lock()
	ratio := st.ratio
	st.mu.Unlock()
	parts := c.split(msgs, from, to, ratio)
	degraded, idSaved := false, false
	for i, p := range parts {
		// Entries, LastConsolidated and messages in errors count from the
		// session's first message.
		at, end := base+p.from, base+p.to
		var content, summary, why string
		if degraded {
			// Do not hammer a model that just failed; the rest of the
			// slice is archived raw too.
			content, why = rawEntry(msgs[p.from:p.to], c.loc), "an earlier part failed"
		} else {
			answer, reason, err := c.summarize(ctx, p, i, len(parts), rep)
			if err != nil {
				return degraded, err
			}
			switch {
			case reason != "":
				degraded, why = true, reason
				content = rawEntry(msgs[p.from:p.to], c.loc)
			case isNothing(answer):
				log.Debug("archive call found nothing worth keeping", "messages", p.to-p.from)
			default:
				content, _ = textcut.Chars(answer, MaxSummaryChars, truncatedSuffix)
				summary = content
			}
		}
		if why != "" {
			rep.Raw = true
			log.Warn("archive summary failed; archiving the messages raw", "reason", why, "messages", p.to-p.from)
		}
		if content != "" {
			if !idSaved {
				// The entry names the session's ID; a restart must know it.
				if err := s.SaveID(); err != nil {
					return degraded, fmt.Errorf("archive messages %d-%d: %w: save the session id: %w", at, end, ErrNotArchived, err)
				}
				idSaved = true
			}
			e, err := c.store.AppendFrom(c.home(s), content, s.Key(), history.Source{SessionID: s.ID(), From: at, To: end})
			if err != nil {
				return degraded, fmt.Errorf("archive messages %d-%d: %w: %w", at, end, ErrNotArchived, err)
			}
			rep.Entries = append(rep.Entries, e.Cursor)
			// The store may have trimmed it; the session keeps what was stored.
			if summary != "" {
				summary = e.Content
			}
		}
		if err := s.SetLastConsolidated(end, summary); err != nil {
			if content != "" {
				log.Error("archive entry written but the session did not record it; the next archive records it instead",
					"from", at, "to", end, "err", err)
			}
			return degraded, fmt.Errorf("record archived messages %d-%d: %w", at, end, err)
		}
		rep.Archived += p.to - p.from
	}
	return degraded, nil
}

// ArchiveCacheKey is the llm.Request.CacheKey of archive calls. Chat calls
// use their session key, which always holds a colon, so they never share it.
const ArchiveCacheKey = "dreamgate-archive"

// rawPrefix starts a raw entry (rawEntry): its text is no summary.
const rawPrefix = "[RAW] "

// skipArchived looks for an archive entry of s's messages starting at from that
// the session never recorded: a process killed after appending it and
// before saving LastConsolidated leaves one. It moves LastConsolidated to
// that entry's end (its summary becomes the session's last one, as if the
// archive had completed) and returns where archiving goes on; from itself
// when there is none. An entry reaching past the session's messages (the
// session file lost some) is not trusted: those messages are archived
// again.
func (c *Consolidator) skipArchived(s Session, base int, msgs []llm.Message, from int, rep *Report) (int, error) {
	e, ok, err := c.store.ArchivedAt(s.Key(), s.ID(), base+from)
	if err != nil {
		return from, fmt.Errorf("archive messages from %d: %w: look up earlier archives: %w", base+from, ErrNotArchived, err)
	}
	if !ok {
		return from, nil
	}
	log := c.logger.With("session", s.Key())
	to := e.Range[1] - base
	if to > len(msgs) {
		log.Warn("history holds an archive of more messages than the session has; archiving them again",
			"cursor", e.Cursor, "from", base+from, "to", e.Range[1], "messages", base+len(msgs))
		return from, nil
	}
	summary := e.Content
	if strings.HasPrefix(summary, rawPrefix) {
		summary = ""
	}
	if err := s.SetLastConsolidated(base+to, summary); err != nil {
		return from, fmt.Errorf("record messages %d-%d found archived: %w", base+from, base+to, err)
	}
	log.Info("messages already archived before a restart; recorded them instead of archiving them again",
		"cursor", e.Cursor, "from", base+from, "to", base+to)
	rep.Recovered = append(rep.Recovered, e.Cursor)
	rep.Archived += to - from
	return to, nil
}

// summarize makes one archive call. reason is non-empty when the answer
// cannot be used (the slice is then archived raw); err is set only when ctx
// ended, in which case nothing is archived.
func (c *Consolidator) summarize(ctx context.Context, p part, i, n int, rep *Report) (answer, reason string, err error) {
	header := fmt.Sprintf("Archive this part of the conversation (%d messages, oldest first):", p.to-p.from)
	if n > 1 {
		header = fmt.Sprintf("Archive this part of the conversation (%d messages, oldest first; piece %d of %d of a longer stretch):", p.to-p.from, i+1, n)
	}
	req := llm.Request{
		Model: c.cfg.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: archivePrompt},
			{Role: llm.RoleUser, Content: header + "\n\n" + p.text},
		},
		Purpose: llm.PurposeArchive,
		// Every archive call opens with the same instructions, whatever
		// the conversation: one key sends them all where those are cached.
		CacheKey: ArchiveCacheKey,
	}
	resp, callErr := c.model.Chat(ctx, req)
	if callErr == nil && resp.Usage.Calls == 0 {
		resp.Usage.Calls = 1 // the client counts calls in its own totals only
	}
	rep.Usage = rep.Usage.Add(resp.Usage)
	switch {
	case callErr != nil && ctx.Err() != nil:
		return "", "", fmt.Errorf("archive call: %w", context.Cause(ctx))
	case callErr != nil:
		c.logger.Warn("archive call failed", "err", callErr)
		return "", "model error: " + errKind(callErr), nil
	case len(resp.ToolCalls) > 0:
		return "", "the model called a tool", nil
	case resp.FinishReason == llm.FinishLength || resp.FinishReason == "content_filter" || resp.FinishReason == "error":
		return "", "the answer was cut off (" + resp.FinishReason + ")", nil
	}
	answer = cleanAnswer(resp.Content)
	if answer == "" {
		return "", "empty answer", nil
	}
	return answer, "", nil
}

// errKind names an llm error's kind for logs without its details.
func errKind(err error) string {
	for _, k := range []error{llm.ErrUnavailable, llm.ErrRejected, llm.ErrMalformed, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	return "other"
}

// part is a run of messages archived by one call, with its transcript.
type part struct {
	from, to int
	text     string
}

// split renders msgs[from:to] and cuts the transcript, by whole messages,
// into parts that each fit an archive call's input budget, preferring to
// cut before a user message. A single message too large for any call is cut
// with a note in its text.
func (c *Consolidator) split(msgs []llm.Message, from, to int, ratio float64) []part {
	lines := make([]string, to-from)
	total := 0
	for i := range lines {
		lines[i] = renderMessage(msgs[from+i], c.loc)
		total += len(lines[i]) + 1
	}
	budget := c.inputBudget()
	if budget <= 0 || scale(int64(total), ratio) <= budget {
		return []part{{from: from, to: to, text: strings.Join(lines, "\n")}}
	}
	cost := make([]int, len(lines))
	for i, l := range lines {
		cost[i] = scale(int64(c.counter.Count(l)+1), ratio)
		if cost[i] > budget {
			lines[i] = cutToBytes(l, int(float64(budget)/max(ratio, 1)), archiveCutNote)
			cost[i] = min(scale(int64(c.counter.Count(lines[i])+1), ratio), budget)
		}
	}
	var parts []part
	start, used := 0, 0
	for i := range lines {
		// Close parts until message i fits; each pass moves start forward.
		for used+cost[i] > budget && i > start {
			end := i
			for j := i; j > start; j-- {
				if msgs[from+j].Role == llm.RoleUser {
					end = j
					break
				}
			}
			parts = append(parts, part{from: from + start, to: from + end, text: strings.Join(lines[start:end], "\n")})
			start, used = end, 0
			for _, k := range cost[start:i] {
				used += k
			}
		}
		used += cost[i]
	}
	return append(parts, part{from: from + start, to: to, text: strings.Join(lines[start:], "\n")})
}

// inputBudget is what an archive call's transcript may take: the archive
// model's hard limit less the instructions (bounded by their bytes) and the
// header; 0 when the window is unknown.
func (c *Consolidator) inputBudget() int {
	if c.cfg.ContextWindow <= 0 {
		return 0
	}
	return max(c.archiveHard-UpperBound(archivePrompt)-2*MessageOverhead-64, 1)
}
