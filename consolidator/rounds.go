package consolidator

import (
	"context"
	"log/slog"

	"github.com/dreamgate/dreamgate/llm"
)

// Report says what one Before, After or ArchiveTail call did.
type Report struct {
	// Rounds is the number of archive rounds run.
	Rounds int
	// Archived is the number of session messages archived.
	Archived int
	// Entries are the history cursors written.
	Entries []int
	// Recovered are the history cursors of entries found already written
	// for the session's next messages (a crash came between an archive
	// and its record): LastConsolidated moved past them, without an
	// archive call. Their messages count in Archived.
	Recovered []int
	// Raw is set when a slice was archived raw (the summary failed).
	Raw bool
	// Usage is what the archive calls cost.
	Usage llm.Usage
	// Before and After are prompt estimates (tokens, provider floor
	// applied). When the cheap byte bound alone showed that nothing was
	// needed, both hold that bound: never below the exact estimate. Both
	// include the continuity window (see Prompt.Kept): archiving drains
	// the unarchived messages to the target, and the window then takes
	// what is left below the trigger.
	Before, After int
	// OverLimit: the prompt still exceeds ContextWindow - MaxTokens - 1024
	// after archiving (nothing more could be archived, or the rounds ran
	// out). The caller must not send it as is.
	OverLimit bool
}

// Before keeps s within budget before a turn and renders p.History for
// it; p.Fixed and p.Tools are the gateway's and are only counted. The
// returned Prompt is what the turn sends: its History reflects any archive
// made here. It is usable also when err is non-nil.
//
// When the estimate exceeds ConsolidateRatio x ContextWindow, or the
// conversation (the messages replayed) exceeds ConversationTokens, Before
// archives slices of the oldest turns, one per round, until the estimate is
// at most TargetRatio x ContextWindow and the conversation at most half of
// ConversationTokens, for at most MaxRounds rounds. A slice
// runs from LastConsolidated to just before a later user message (so the
// newest user turn is never archived and tool calls stay with their
// results). A failed summary archives the slice raw and ends the rounds.
// Report.OverLimit says the prompt still exceeds the hard limit.
//
// Before also chooses the continuity window (Prompt.Kept): while fewer
// than keepMessages messages are unarchived, the keepMessages messages
// before LastConsolidated, from the user message opening their turn, that
// the prompt still replays, so that it always carries the session's last
// keepMessages messages; as far as the prompt stays at or below the
// trigger, whole user turns being dropped from the window's start until it
// does. With the budget off the window is not limited.
//
// The error is non-nil when an archive entry or the session's new
// LastConsolidated could not be saved (ErrNotArchived for the former), or
// ctx ended; what was archived before stays archived.
func (c *Consolidator) Before(ctx context.Context, s Session, p Prompt) (Prompt, Report, error) {
	return c.keep(ctx, s, c.render(s, p))
}

// After keeps s within budget after a turn, as Before does. p is the Prompt
// Before returned (the prompt as sent); sent is what the provider reported
// of the turn's last call, recorded first as a floor for later estimates.
// A turn whose ctx has already ended (stopped, or shut down) is not
// followed by archiving: After then only records sent and returns a zero
// Report and nil. Errors are as for Before.
func (c *Consolidator) After(ctx context.Context, s Session, p Prompt, sent Sent) (Report, error) {
	c.observe(s, p, sent)
	if ctx.Err() != nil {
		return Report{}, nil
	}
	_, rep, err := c.keep(ctx, s, p)
	return rep, err
}

// Sent is what the provider said about a turn's last model call.
type Sent struct {
	// PromptTokens is the provider's prompt_tokens for that call; <= 0
	// when it reported none (nothing is recorded then).
	PromptTokens int
	// Messages is how many of the session's messages that call carried:
	// the session's length before the final reply was appended.
	Messages int
}

// keep runs the archive rounds of Before and After on p, re-rendering
// p.History after each round (an archive entry joins the Recent history),
// and returns p as it stands at the end, with its continuity window.
func (c *Consolidator) keep(ctx context.Context, s Session, p Prompt) (Prompt, Report, error) {
	var rep Report
	if c.cfg.ContextWindow <= 0 {
		_, msgs, lc := held(s)
		p.Kept = lc - windowStart(msgs, lc)
		return p, rep, nil
	}
	p.Kept = 0
	unlock, err := c.lockSession(ctx, s)
	if err != nil {
		return p, rep, err
	}
	defer unlock()
	st := c.state(s.ID())

	fx := p.base()
	base, msgs, lc := held(s)
	from := windowStart(msgs, lc)
	note := 0
	if from < lc {
		note = len(continuityNote)
	}
	st.mu.Lock()
	st.sync(base, msgs)
	if b := st.bound(from, len(fx)+note); b <= c.trigger && (c.conv == 0 || st.convBound(from, note, b) <= c.conv) {
		// The whole window fits, and nothing needs archiving.
		st.mu.Unlock()
		p.Kept = lc - from
		rep.Before, rep.After = b, b
		return p, rep, nil
	}
	est := st.estimate(c.counter, msgs, lc, fx)
	th := c.thresholds(st.fixedTokens())
	st.mu.Unlock()
	if est <= th.trigger {
		p, est, _, _ = c.fit(st, s, p)
		rep.Before, rep.After = est, est
		return p, rep, nil
	}
	// Over the trigger without any window, so the window is empty: the
	// rounds drain the unarchived messages alone.
	rep.Before, rep.After = est, est

	log := c.logger.With("session", s.Key())
	for rep.Rounds < c.cfg.MaxRounds && est > th.target {
		st.mu.Lock()
		end := st.boundary(c.counter, msgs, lc, est-th.target)
		st.mu.Unlock()
		if end < 0 {
			log.Debug("nothing to archive: no user message after the unarchived start", "estimate", est)
			break
		}
		rep.Rounds++
		raw, err := c.archive(ctx, s, st, base, msgs, lc, end, &rep)
		p = c.render(s, p)
		if err != nil {
			p, rep.After, _, _ = c.fit(st, s, p)
			return p, rep, err
		}
		fx = p.base()
		base, msgs, lc = held(s)
		st.mu.Lock()
		st.sync(base, msgs)
		est = st.estimate(c.counter, msgs, lc, fx)
		th = c.thresholds(st.fixedTokens())
		st.mu.Unlock()
		if raw {
			break
		}
	}
	return c.settle(st, s, p, rep, log)
}

// settle fits p after keep's rounds and says what they did.
func (c *Consolidator) settle(st *sessionCounts, s Session, p Prompt, rep Report, log *slog.Logger) (Prompt, Report, error) {
	p, rep.After, _, _ = c.fit(st, s, p)
	if rep.After > c.hard {
		rep.OverLimit = true
		log.Warn("prompt still over the hard limit after archiving",
			"estimate", rep.After, "limit", c.hard, "rounds", rep.Rounds)
	}
	if rep.Rounds > 0 {
		log.Info("archived old turns", "rounds", rep.Rounds, "messages", rep.Archived,
			"entries", len(rep.Entries), "raw", rep.Raw, "before", rep.Before, "after", rep.After,
			"kept", p.Kept)
	}
	return p, rep, nil
}

// boundary picks where the slice starting at start ends: just before the
// first later user message by which at least need (scaled) tokens are
// freed, else before the last later user message; -1 if there is none.
func (st *sessionCounts) boundary(c *Counter, msgs []llm.Message, start, need int) int {
	need = max(need, 1)
	last := -1
	freed := 0.0
	for i := start; i < len(msgs); i++ {
		if i > start && msgs[i].Role == llm.RoleUser {
			last = i
			if freed >= float64(need) {
				return i
			}
		}
		freed += float64(st.msg(c, msgs, i)) * st.ratio
	}
	return last
}
