package consolidator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
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
	// AppendFrom appends an archive entry of the memory scope scope that
	// records which messages of which session generation it holds.
	AppendFrom(scope audience.Scope, content, sessionKey string, src history.Source) (history.Entry, error)
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
	// Audience is who can read the conversation; always valid (a
	// conversation whose platform said nothing has the narrowest one,
	// audience.Unknown). Its archive entries go to its Home scope, and its
	// Recent history shows only entries of its Readable scopes.
	Audience() audience.Audience
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
	// ConversationTokens is the conversation's own budget, apart from the
	// window: when the messages a prompt replays (the conversation, not
	// the system prompt and tools) pass it, the oldest turns are archived
	// until they take at most half of it. A prompt then costs about the
	// system prompt plus half to all of this, however large the window.
	// 0 leaves only the ratios of the window (nanobot's rule).
	ConversationTokens int
	// ArchiveContextWindow and ArchiveMaxTokens are the window and reply
	// allowance of the model that archive calls go to, when it is not the
	// chat model; 0 means ContextWindow and MaxTokens. An archive call's
	// transcript is cut to fit them.
	ArchiveContextWindow int
	ArchiveMaxTokens     int
	// MaxRounds caps archive rounds per Before or After call (5).
	MaxRounds int
	// Model names the model for archive calls; "" is the client's default.
	Model string
	// Scopes says which memory scope a conversation is archived into and
	// which scopes' entries its prompt may show (*memory.Memory, where
	// the shared-memory setting is decided); nil: each audience's own
	// (audience.Home, audience.MayRead).
	Scopes Scopes
	// Counter counts tokens; nil is a Counter of its own. Pass the one
	// the prompt's memory budget counts with, so the vocabulary is loaded
	// once.
	Counter *Counter
	// Folded, when set, says how far Dream has read each memory scope into
	// memory (*dream.Ledger): the Recent history leaves out a scope's
	// entries up to its own cursor, whatever another scope has yet to
	// read. Nil: every entry past memory/.dream_cursor (the frontier of
	// every scope) is shown.
	Folded Folded
}

// Folded says how far Dream has read a memory scope: the scope's entries
// up to its cursor are in the scope's memory files.
type Folded interface {
	Cursor(scope audience.Scope) (int, error)
}

// safetyMargin is kept free below the context window besides the reply:
// a prompt never exceeds ContextWindow - MaxTokens - safetyMargin.
const safetyMargin = 1024

// maxSessionStates bounds the per-session count caches kept in memory.
const maxSessionStates = 256

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
	// archiveHard is the hard limit of an archive call's prompt.
	archiveHard int
	// conv and convTarget are the conversation budget and what archiving
	// drains the conversation to; 0 when there is none.
	conv, convTarget int

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
	if cfg.Counter == nil {
		cfg.Counter = NewCounter()
	}
	c := &Consolidator{
		model:   model,
		store:   store,
		cfg:     cfg,
		logger:  logger,
		counter: cfg.Counter,
		loc:     time.Local,
		states:  map[string]*sessionCounts{},
		locks:   map[string]*keyLock{},
	}
	if cfg.ContextWindow > 0 {
		c.hard = cfg.ContextWindow - cfg.MaxTokens - safetyMargin
		c.trigger = min(int(cfg.ConsolidateRatio*float64(cfg.ContextWindow)), c.hard)
		c.target = min(int(cfg.TargetRatio*float64(cfg.ContextWindow)), c.trigger)
		if cfg.ConversationTokens > 0 {
			c.conv, c.convTarget = cfg.ConversationTokens, cfg.ConversationTokens/2
		}
		c.archiveHard = c.hard
		if cfg.ArchiveContextWindow > 0 {
			c.archiveHard = cfg.ArchiveContextWindow - cfg.ArchiveMaxTokens - safetyMargin
		}
	}
	return c
}

// thresholds are the trigger and target of one prompt, in tokens of the
// whole prompt: the window's (ConsolidateRatio, TargetRatio), lowered by
// the conversation budget to what the part outside the conversation takes
// plus the budget (or half of it). The conversation budget so counts only
// the conversation: memory files or a long Recent history never make a
// conversation archive more often.
type thresholds struct{ trigger, target int }

// thresholds returns the thresholds of a prompt whose system prompt and
// tools take fixed tokens (scaled by the provider floor).
func (c *Consolidator) thresholds(fixed int) thresholds {
	t := thresholds{c.trigger, c.target}
	if c.conv > 0 {
		t.trigger = min(t.trigger, fixed+c.conv)
		t.target = min(t.target, fixed+c.convTarget)
	}
	return t
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

// Scopes says which memory scopes a conversation's audience is archived
// into and reads (*memory.Memory).
type Scopes interface {
	Home(a audience.Audience) audience.Scope
	MayRead(a audience.Audience, s audience.Scope) bool
}

// home is the scope s's archive entries are written in.
func (c *Consolidator) home(s Session) audience.Scope {
	if c.cfg.Scopes == nil {
		return s.Audience().Home()
	}
	return c.cfg.Scopes.Home(s.Audience())
}

// readable reports whether s's prompt may show an entry of scope.
func (c *Consolidator) readable(s Session, scope audience.Scope) bool {
	if c.cfg.Scopes == nil {
		return s.Audience().MayRead(scope)
	}
	return c.cfg.Scopes.MayRead(s.Audience(), scope)
}

func clampLC(lc, n int) int {
	return min(max(lc, 0), n)
}
