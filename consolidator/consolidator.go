package consolidator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
)

// Model is the one LLM call the Consolidator makes. Errors are llm.Client's:
// any error is treated as a failed summary (the slice is archived raw),
// except the caller's own context ending, which archives nothing.
type Model interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// History is the archive as the Consolidator uses it; *history.Store
// implements it. Errors are the store's: an entry that AppendFrom did not
// return is not in history.
type History interface {
	// AppendFrom appends an archive entry that records which messages of
	// which session generation it holds.
	AppendFrom(content, sessionKey string, src history.Source) (history.Entry, error)
	// ArchivedAt returns the newest entry of that session generation when
	// its range starts at from: those messages are already archived.
	ArchivedAt(sessionKey, sessionID string, from int) (history.Entry, bool, error)
	// UnreadLast returns the session's last n entries Dream has not read
	// yet (0: all of them), oldest first.
	UnreadLast(sessionKey string, n int) ([]history.Entry, error)
}

// Session is the consolidator's view of one conversation; the gateway's
// session store implements it. Its methods must be safe to call while the
// gateway appends to the session from another goroutine.
type Session interface {
	// Key is the session key, written to history entries as session_key.
	Key() string
	// ID changes when /new starts over under the same key; counts are
	// cached per ID, and archive entries record it with the range of
	// messages they hold. Never empty.
	ID() string
	// SaveID makes ID durable, so that a restart sees the same ID (and
	// finds the entries written under it). Called before the first archive
	// entry of an archive call; an error means it may not be.
	SaveID() error
	// Tail returns the messages the session holds, oldest first: msgs[i]
	// is message base+i (indexes count from the session's first message,
	// archived or not). They include every message from LastConsolidated
	// on and at least the last 8 before it, from the user message that
	// opens their turn: the continuity window never reaches further.
	// Callers do not modify the slice; between calls the session only
	// appends, and base only grows as messages are archived.
	Tail() (base int, msgs []llm.Message)
	// LastConsolidated is how many leading messages are archived.
	LastConsolidated() int
	// SetLastConsolidated persists n and, when summary is not "", the text
	// of the newest archive summary ("" keeps the old one). An error means
	// n was not recorded.
	SetLastConsolidated(n int, summary string) error
	// LastSummary is the text of the last archive summary, "" if none.
	LastSummary() string
}

// Config sets the token budget. Zero values take the defaults noted.
type Config struct {
	// ContextWindow is the model's context in tokens; <= 0 turns the
	// budget off (Before and After then archive nothing).
	ContextWindow int
	// MaxTokens is the reply's token allowance.
	MaxTokens int
	// ConsolidateRatio x ContextWindow is the trigger (0.5).
	ConsolidateRatio float64
	// TargetRatio x ContextWindow is what archiving drains to (0.3).
	TargetRatio float64
	// MaxRounds caps archive rounds per Before or After call (5).
	MaxRounds int
	// Model names the model for archive calls; "" is the client's default.
	Model string
}

// safetyMargin is kept free below the context window besides the reply:
// a prompt never exceeds ContextWindow - MaxTokens - safetyMargin.
const safetyMargin = 1024

// runtimeAllowance is what Status adds for the small changing tail of the
// system prompt (time, channel, sender), which is never counted; the
// per-turn check leaves it to the safety margin.
const runtimeAllowance = 64

// maxSessionStates bounds the per-session count caches kept in memory.
const maxSessionStates = 256

// keepMessages is how many of a session's last messages its prompt keeps
// in view after they are archived, at least, when the budget allows
// (nanobot keeps 8 too): the conversation reads on after an archive.
// Sessions hold only a margin of archived messages (see Session.Tail; the
// gateway's keep 16 from a user turn): raising this past it needs the
// margin raised too.
const keepMessages = 8

// Recent history limits (DESIGN §3).
const (
	recentMaxEntries = 50
	recentMaxTokens  = 8000
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

// Budget is the token budget and where a session's prompt stands in it,
// as /status shows it. All figures are tokens; all are 0 when the budget is
// off (Config.ContextWindow <= 0).
type Budget struct {
	// Estimate is the exact prompt estimate (provider floor applied) plus
	// an allowance for the runtime tail of the system prompt.
	Estimate int
	// Limit is the hard limit: ContextWindow - MaxTokens - 1024.
	Limit int
	// Trigger: archiving starts when the estimate exceeds it
	// (ConsolidateRatio x ContextWindow, at most Limit).
	Trigger int
	// Target: archiving stops once the estimate is at or below it
	// (TargetRatio x ContextWindow, at most Trigger).
	Target int
	// Messages is how many of the session's messages the prompt replays:
	// the unarchived ones and the continuity window. Set also when the
	// budget is off.
	Messages int
}

// Consolidator keeps sessions within their token budget by archiving their
// oldest turns into history.jsonl, and renders the part of the system prompt
// that comes from that archive. Safe for concurrent use; Before, After and
// ArchiveTail calls for the same session (key and ID) are serialized.
type Consolidator struct {
	model   Model
	store   History
	cfg     Config
	logger  *slog.Logger
	counter *Counter
	loc     *time.Location

	trigger, target, hard int

	mu     sync.Mutex
	tick   uint64
	states map[string]*sessionCounts
	locks  map[string]*keyLock

	// recentMu guards recentCounts: token counts of Recent history lines
	// by entry cursor (entries never change), so a block over the byte
	// fast path is not re-tokenised on every turn.
	recentMu     sync.Mutex
	recentCounts map[int]int
}

type keyLock struct {
	ch   chan struct{}
	refs int
}

// New returns a Consolidator archiving through model into store (a
// *history.Store). A nil logger discards.
func New(model Model, store History, cfg Config, logger *slog.Logger) *Consolidator {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ConsolidateRatio <= 0 {
		cfg.ConsolidateRatio = 0.5
	}
	if cfg.TargetRatio <= 0 {
		cfg.TargetRatio = 0.3
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = 5
	}
	c := &Consolidator{
		model:   model,
		store:   store,
		cfg:     cfg,
		logger:  logger,
		counter: NewCounter(),
		loc:     time.Local,
		states:  map[string]*sessionCounts{},
		locks:   map[string]*keyLock{},
	}
	if cfg.ContextWindow > 0 {
		c.hard = cfg.ContextWindow - cfg.MaxTokens - safetyMargin
		c.trigger = min(int(cfg.ConsolidateRatio*float64(cfg.ContextWindow)), c.hard)
		c.target = min(int(cfg.TargetRatio*float64(cfg.ContextWindow)), c.trigger)
	}
	return c
}

// Before keeps s within budget before a turn and renders p.History for
// it; p.Fixed and p.Tools are the gateway's and are only counted. The
// returned Prompt is what the turn sends: its History reflects any archive
// made here. It is usable also when err is non-nil.
//
// When the estimate exceeds ConsolidateRatio x ContextWindow, Before
// archives slices of the oldest turns, one per round, until the estimate is
// at most TargetRatio x ContextWindow, for at most MaxRounds rounds. A slice
// runs from LastConsolidated to just before a later user message (so the
// newest user turn is never archived and tool calls stay with their
// results). A failed summary archives the slice raw and ends the rounds.
// Report.OverLimit says the prompt still exceeds the hard limit.
//
// Before also chooses the continuity window (Prompt.Kept): the last
// messages before LastConsolidated that the prompt still replays, at least
// the session's last keepMessages messages from the user message opening
// their turn, as far as the prompt stays at or below the trigger; whole
// user turns are dropped from the window's start until it does. With the
// budget off the window is not limited.
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

// Status reports s's budget as /status shows it, with p as for Before
// (its History is rendered here). It counts exactly, loading the tokenizer
// if needed; counts are cached, so repeated calls cost little.
func (c *Consolidator) Status(s Session, p Prompt) Budget {
	if c.cfg.ContextWindow <= 0 {
		_, msgs, lc := held(s)
		return Budget{Messages: len(msgs) - min(lc, continuityStart(msgs))}
	}
	_, est, n := c.fit(c.state(s.ID()), s, c.render(s, p))
	return Budget{
		Estimate: est + runtimeAllowance,
		Limit:    c.hard,
		Trigger:  c.trigger,
		Target:   c.target,
		Messages: n,
	}
}

// fit chooses the continuity window of p (see Before) as s stands now and
// returns p with Kept set, the estimate of the prompt and how many of the
// session's messages it replays.
func (c *Consolidator) fit(st *sessionCounts, s Session, p Prompt) (Prompt, int, int) {
	base, msgs, lc := held(s)
	from := min(lc, continuityStart(msgs))
	note := 0
	if from < lc {
		note = c.counter.Count(continuityNote)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sync(base, msgs)
	start, est := st.window(c.counter, msgs, lc, from, p.base(), note, c.trigger)
	p.Kept = lc - start
	return p, est, len(msgs) - start
}

// estimate is the exact prompt estimate for s with fixed as the part
// outside its messages: cl100k tokens scaled by the provider floor.
func (c *Consolidator) estimate(s Session, fixed string) int {
	st := c.state(s.ID())
	st.mu.Lock()
	defer st.mu.Unlock()
	base, msgs, lc := held(s)
	st.sync(base, msgs)
	return st.estimate(c.counter, msgs, lc, fixed)
}

// observe records the provider's prompt_tokens for the last call made with
// s and p, which carried s's messages from LastConsolidated - p.Kept up to
// sent.Messages. The ratio to our own count of that prompt (at least 1)
// scales later estimates, since providers' tokenizers often count more
// than cl100k.
func (c *Consolidator) observe(s Session, p Prompt, sent Sent) {
	if sent.PromptTokens <= 0 {
		return
	}
	st := c.state(s.ID())
	st.mu.Lock()
	defer st.mu.Unlock()
	base, msgs, lc := held(s)
	st.sync(base, msgs)
	n := clampLC(sent.Messages-base, len(msgs))
	st.pending = &observation{
		provider: sent.PromptTokens,
		fixed:    p.counted(),
		lc:       min(max(lc-p.Kept, 0), n),
		n:        n,
	}
	if c.counter.Loaded() {
		st.resolve(c.counter, msgs)
	}
}

// keep runs the archive rounds of Before and After on p, re-rendering
// p.History after each round (an archive entry joins the Recent history),
// and returns p as it stands at the end, with its continuity window.
func (c *Consolidator) keep(ctx context.Context, s Session, p Prompt) (Prompt, Report, error) {
	var rep Report
	if c.cfg.ContextWindow <= 0 {
		_, msgs, lc := held(s)
		p.Kept = lc - min(lc, continuityStart(msgs))
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
	from := min(lc, continuityStart(msgs))
	fixedLen := len(fx)
	if from < lc {
		fixedLen += len(continuityNote)
	}
	st.mu.Lock()
	st.sync(base, msgs)
	if b := st.bound(from, fixedLen); b <= c.trigger {
		// The whole window fits, and nothing needs archiving.
		st.mu.Unlock()
		p.Kept = lc - from
		rep.Before, rep.After = b, b
		return p, rep, nil
	}
	est := st.estimate(c.counter, msgs, lc, fx)
	st.mu.Unlock()
	if est <= c.trigger {
		p, est, _ = c.fit(st, s, p)
		rep.Before, rep.After = est, est
		return p, rep, nil
	}
	// Over the trigger without any window, so the window is empty: the
	// rounds drain the unarchived messages alone.
	rep.Before, rep.After = est, est

	log := c.logger.With("session", s.Key())
	for rep.Rounds < c.cfg.MaxRounds && est > c.target {
		st.mu.Lock()
		end := st.boundary(c.counter, msgs, lc, est-c.target)
		st.mu.Unlock()
		if end < 0 {
			log.Debug("nothing to archive: no user message after the unarchived start", "estimate", est)
			break
		}
		rep.Rounds++
		raw, err := c.archive(ctx, s, st, base, msgs, lc, end, &rep)
		p = c.render(s, p)
		if err != nil {
			p, rep.After, _ = c.fit(st, s, p)
			return p, rep, err
		}
		fx = p.base()
		base, msgs, lc = held(s)
		st.mu.Lock()
		st.sync(base, msgs)
		est = st.estimate(c.counter, msgs, lc, fx)
		st.mu.Unlock()
		if raw {
			break
		}
	}
	p, rep.After, _ = c.fit(st, s, p)
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

// held is what s holds of its messages (see Session.Tail), with
// LastConsolidated as an index into msgs.
func held(s Session) (base int, msgs []llm.Message, lc int) {
	base, msgs = s.Tail()
	return base, msgs, clampLC(s.LastConsolidated()-base, len(msgs))
}

// continuityStart is where the continuity window of msgs may start at the
// earliest: the start of its last keepMessages messages, moved back to the
// user message that opens their turn (0 when there is none).
func continuityStart(msgs []llm.Message) int {
	for i := len(msgs) - keepMessages; i > 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return i
		}
	}
	return 0
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
			e, err := c.store.AppendFrom(content, s.Key(), history.Source{SessionID: s.ID(), From: at, To: end})
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

// inputBudget is what an archive call's transcript may take: the hard limit
// less the instructions (bounded by their bytes) and the header; 0 when the
// window is unknown.
func (c *Consolidator) inputBudget() int {
	if c.cfg.ContextWindow <= 0 {
		return 0
	}
	return max(c.hard-UpperBound(archivePrompt)-2*MessageOverhead-64, 1)
}

// recentHistory is the body of a session's "Recent history" block: its
// entries Dream has not read yet, the newest 50, as many of those as fit in
// 8K tokens, oldest first, one "- [timestamp] content" item each. "" when
// there are none.
func (c *Consolidator) recentHistory(sessionKey string) (string, error) {
	entries, err := c.store.UnreadLast(sessionKey, recentMaxEntries)
	if err != nil {
		return "", fmt.Errorf("recent history: %w", err)
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

// state returns the count cache of a session ID, evicting the least
// recently used one beyond maxSessionStates.
func (c *Consolidator) state(id string) *sessionCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	st := c.states[id]
	if st == nil {
		st = newSessionCounts()
		c.states[id] = st
		if len(c.states) > maxSessionStates {
			oldest, oldestID := uint64(0), ""
			for k, v := range c.states {
				if k != id && (oldestID == "" || v.used < oldest) {
					oldest, oldestID = v.used, k
				}
			}
			delete(c.states, oldestID)
		}
	}
	st.used = c.tick
	return st
}

// lockSession serializes Before, After and ArchiveTail per session: per key and
// ID, so that the background archive of a conversation ended by /new does
// not hold up the first turn of the new one under the same key. Waiting
// ends with ctx.
func (c *Consolidator) lockSession(ctx context.Context, s Session) (func(), error) {
	key := s.Key() + "\x00" + s.ID()
	c.mu.Lock()
	kl := c.locks[key]
	if kl == nil {
		kl = &keyLock{ch: make(chan struct{}, 1)}
		c.locks[key] = kl
	}
	kl.refs++
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		kl.refs--
		if kl.refs == 0 {
			delete(c.locks, key)
		}
		c.mu.Unlock()
	}
	select {
	case kl.ch <- struct{}{}:
		return func() { <-kl.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, fmt.Errorf("wait for session %s: %w", s.Key(), context.Cause(ctx))
	}
}

func clampLC(lc, n int) int {
	return min(max(lc, 0), n)
}
