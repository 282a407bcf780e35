// Package gateway is the heart of a running dreamgate: it takes inbound
// messages from the channels, runs one worker per session (a session's turns
// in order, sessions in parallel, a global cap on concurrent model calls),
// routes slash commands, builds prompts, runs the agent loop and sends the
// replies back. The token budget is not its business: the consolidator owns
// it, renders the session's part of the system prompt (after the fixed
// prefix the gateway builds) and reports the figures /status shows.
//
// It sits at the top of the library packages: it may import consolidator,
// dream, gitstore, agent, llm, channels and workspace-template; none of them
// imports it. Concrete adapters are chosen in cmd/dreamgate, not here.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/recall"
)

// Model is what the gateway needs of the LLM client.
type Model interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// LimitConcurrency wraps m so that at most n calls run at once; the others
// wait (or give up when their context ends). It caps the load on the
// provider across all sessions.
func LimitConcurrency(m Model, n int) Model {
	if n <= 0 {
		return m
	}
	return &limited{m: m, sem: make(chan struct{}, n)}
}

type limited struct {
	m   Model
	sem chan struct{}
}

func (l *limited) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	defer func() { <-l.sem }()
	return l.m.Chat(ctx, req)
}

// Consolidator owns the token budget and the archive. A turn calls it
// twice: Before (which may archive, and renders the session's part of the
// prompt) and After; /new and idle sessions call ArchiveTail; /status calls
// Status. Errors are consolidator.Consolidator's: a failed archive is
// logged and the turn goes on.
type Consolidator interface {
	Before(ctx context.Context, s consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error)
	After(ctx context.Context, s consolidator.Session, p consolidator.Prompt, sent consolidator.Sent) (consolidator.Report, error)
	ArchiveTail(ctx context.Context, s consolidator.Session) (consolidator.Report, error)
	Status(s consolidator.Session, p consolidator.Prompt) consolidator.Budget
}

// Config holds the gateway's settings; cmd fills it from the config file.
type Config struct {
	Workspace         string
	ModelName         string
	MaxToolIterations int
	// QueueSize bounds the messages waiting per session; 0 means 32.
	QueueSize int
	// IdleCompactAfter archives a session's tail after this much quiet; 0
	// turns idle compaction off.
	IdleCompactAfter time.Duration
	// Admins are "channel:userID" entries allowed to run admin commands.
	Admins []string
	// MaxMessageBytes caps an inbound message; a longer one is cut, saved
	// with a marker and answered with a notice. 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// AnswerPending: at start, messages a crash left unanswered are
	// answered when received within this, and asked to be sent again when
	// older (inbox.go); 0 turns the search off.
	AnswerPending time.Duration
}

// Deps are the parts the gateway is wired with.
type Deps struct {
	Model        Model
	Sessions     *session.Store
	Consolidator Consolidator
	Prompts      *PromptBuilder
	// Memory is the workspace's memory: which scopes an audience reads
	// and is archived into (with memory shared, the default scope for
	// everyone, whose chat file tools then reach the workspace root),
	// their labels and files. nil: Prompts', else scoped memory read from
	// Config.Workspace.
	Memory *memory.Memory
	// Tools are the tools of chat turns; AdminTools, when set, replace
	// them in turns from admins (see turnTools).
	Tools      []agent.Tool
	AdminTools []agent.Tool
	// ScopeFiles gives the file tools of a conversation whose memory is a
	// scope of its own (every audience but the operator's, unless memory
	// is shared): they replace Tools and AdminTools there. Without it such
	// a conversation has no file tools.
	ScopeFiles ScopeFiles
	// MemoryCopy, when set, writes a scope's memory files into its folder
	// from where memory is kept before a turn's file tools may read them
	// (the memory repository in the database, which no folder holds);
	// nil: the folder's files are the memory.
	MemoryCopy func(scope audience.Scope) error
	// TurnTools, when set, adds tools chosen per turn by the sender's
	// admin status (MCP servers).
	TurnTools TurnTools
	// Provenance, when set, gives /why the sources of memory lines.
	Provenance Provenance
	// WebLinks, when set (the memory page runs), makes the sign-in links
	// /web-link sends in a DM.
	WebLinks WebLinks
	// Deep, when set, is asked for a deep Dream of each scope the prompt
	// finds over its memory budget (Prompts' HotMemory).
	Deep DeepDreams
	// Recall, when set, gives every turn the recall tool: a search of
	// what was said before, within the scopes the turn's audience may
	// read (the default scope alone when memory is shared).
	Recall recall.Searcher
	// Dream and MemoryLog are optional: without them the /dream commands
	// say Dream is off.
	Dream     Dreamer
	MemoryLog MemoryLog
	// DreamOff is what /dream and /status say when Dream is nil ("" means
	// it is off in the config).
	DreamOff string
	// Usage reports tokens used per purpose, for /status.
	Usage func() map[string]llm.Usage
	// ModelState reports what the model's client last learned of its
	// endpoint, for /status (nil: nothing is said about it).
	ModelState func() llm.State
	// Models, when set, replaces /status's Model line with a line per
	// purpose: its models in order and which answered last (the config
	// names several models). operator: the reader may see why a model is
	// passed over.
	Models func(operator bool) []string
	// Observer, when set, is told of every turn, command and busy
	// refusal (metrics).
	Observer Observer
	Logger   *slog.Logger
	Now      func() time.Time
}

// Result is the outcome of one inbound message.
type Result struct {
	// Reply is what was sent back ("" when nothing was).
	Reply string
	// Err is set when the turn failed; the user was sent a one-sentence
	// explanation (Result.Reply).
	Err error
	// Unanswered is set when a turn ended without the model's answer
	// (too many tool steps, a repeated or failing tool, an empty answer):
	// Reply is the notice sent instead. A one-shot chat exits 1 on it.
	Unanswered bool

	// modelTime is what a turn's chat model calls took, for the Observer.
	modelTime time.Duration
}

// Gateway routes messages between channels and the agent.
type Gateway struct {
	cfg           Config
	deps          Deps
	mem           *memory.Memory // deps.Memory
	logger        *slog.Logger
	now           func() time.Time
	admins        map[string]bool
	commands      map[string]*command
	started       time.Time
	toolText      string // Tools, rendered as the consolidator counts them
	adminToolText string // AdminTools, likewise
	usage         *convUsage

	// turnCtx is the parent of every turn; cancelled when shutdown runs out
	// of patience.
	turnCtx    context.Context
	cancelTurn context.CancelFunc
	// bgCtx is the parent of background work that may be abandoned (Dream
	// runs started from chat); Shutdown cancels it at once.
	bgCtx    context.Context
	cancelBg context.CancelFunc
	// inbox and inboxLeft: OpenInbox (inbox.go); nil without one.
	inbox     inboxRecord
	inboxLeft []inboxLine
	// answering: the messages whose answer may be out already (answer.go).
	answering answering
	// later: the commands answered in the background (later.go).
	later laterAnswers
	// share, when set, shares conversations with other processes
	// (share.go).
	share *sharing

	mu       sync.Mutex
	closed   bool
	channels map[string]channels.Channel
	workers  map[string]*worker
	// local are the conversations of a local terminal, kept awake while
	// loaded (releaseSession).
	local map[string]bool
	// room is closed, and replaced, each time a job leaves a session's
	// queue: a script's message waits on it for room (enqueueWait).
	room chan struct{}

	workerWG     sync.WaitGroup // session workers
	backgroundWG sync.WaitGroup // /new archives, /dream runs, command replies
}

// New builds a gateway. Add channels with AddChannel before Run.
func New(cfg Config, deps Deps) *Gateway {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 32
	}
	if cfg.MaxToolIterations <= 0 {
		cfg.MaxToolIterations = 20
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Memory == nil && deps.Prompts != nil {
		deps.Memory = deps.Prompts.mem
	}
	if deps.Memory == nil {
		deps.Memory = memory.New(memory.NewDisk(cfg.Workspace), false).WithLogger(deps.Logger)
	}
	if deps.Prompts != nil {
		// The prompt names the recall tool exactly when every turn has it
		// (toolsFor): never a tool the model cannot call, and never
		// "what is not here you do not remember" beside a search that
		// would find it.
		deps.Prompts.hot.Recall = deps.Recall != nil
	}
	g := &Gateway{
		cfg: cfg, deps: deps, mem: deps.Memory, logger: deps.Logger, now: deps.Now,
		admins:   map[string]bool{},
		channels: map[string]channels.Channel{},
		workers:  map[string]*worker{},
		local:    map[string]bool{},
		room:     make(chan struct{}),
		started:  deps.Now(),
		usage:    &convUsage{},
	}
	if deps.Consolidator != nil {
		g.deps.Consolidator = countedConsolidator{Consolidator: deps.Consolidator, usage: g.usage}
	}
	for _, a := range cfg.Admins {
		g.admins[a] = true
	}
	g.commands = commandTable()
	g.toolText = toolText(deps.Tools)
	g.adminToolText = toolText(deps.AdminTools)
	g.turnCtx, g.cancelTurn = context.WithCancel(context.Background())
	g.bgCtx, g.cancelBg = context.WithCancel(context.Background())
	return g
}

// AddChannel registers a channel; its replies are sent through it.
func (g *Gateway) AddChannel(ch channels.Channel) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.channels[ch.Name()] = ch
}

// Health reports each channel's state; channels without a connection
// report "connected" once added.
func (g *Gateway) Health() map[string]channels.Health {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]channels.Health{}
	for name, ch := range g.channels {
		if h, ok := ch.(channels.HealthReporter); ok {
			out[name] = h.Health()
		} else {
			out[name] = channels.Health{State: channels.StateConnected, Since: g.started}
		}
	}
	return out
}

// Run runs every channel and the idle-compaction sweep until ctx ends. A
// channel that fails for good is logged and marked; the others go on.
func (g *Gateway) Run(ctx context.Context) error {
	g.mu.Lock()
	chs := make([]channels.Channel, 0, len(g.channels))
	for _, ch := range g.channels {
		chs = append(chs, ch)
	}
	g.mu.Unlock()
	g.answerPending()
	var wg sync.WaitGroup
	for _, ch := range chs {
		wg.Go(func() {
			if err := ch.Run(ctx, g); err != nil && ctx.Err() == nil {
				g.logger.Error("channel stopped", "channel", ch.Name(), "err", err)
			}
		})
	}
	wg.Go(func() { g.idleLoop(ctx) })
	if g.share != nil {
		wg.Go(func() { g.shareLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// Shutdown stops accepting messages and lets queued and running turns
// finish. When ctx ends first, running turns are cancelled and what is still
// queued is saved and answered with a notice. It then waits for background
// work: archives of /new, bounded by their own timeout, for an archive must
// not be lost, and Dream runs started from chat, which a service stopping
// on a signal cancels first (CancelBackground).
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()

	drained := make(chan struct{})
	go func() { g.workerWG.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		g.logger.Warn("shutdown: cancelling running turns")
		g.cancelTurn()
		<-drained
		err = fmt.Errorf("shutdown: turns cancelled: %w", ctx.Err())
	}
	g.backgroundWG.Wait()
	g.cancelTurn()
	g.cancelBg()
	g.closeInbox()
	return err
}

// CancelBackground cancels the background work that may be abandoned:
// Dream runs started from chat, which can take half an hour; cancelled, a
// Dream rolls back and keeps its batch for the next run. A gateway stopping
// on a signal calls it before Shutdown, so the stop is bounded; a one-shot
// chat does not, so its /dream finishes.
func (g *Gateway) CancelBackground() { g.cancelBg() }

// goBackground runs f as owned background work that Shutdown waits for.
// It is called from jobs, which Shutdown waits for before it waits for
// background work, so the Add never races the Wait.
func (g *Gateway) goBackground(f func()) {
	g.backgroundWG.Go(f)
}

// lastSendTimeout bounds a send made after shutdown ran out of time (the
// notice that a message was not answered).
const lastSendTimeout = 10 * time.Second

// send delivers an outbound message through its channel, logging failures
// with the session key (the adapters have already retried). A send may wait
// out rate limits for its channel's retry window, minutes, holding the
// session's later replies behind it in order; it ends early only when
// shutdown runs out of time (turnCtx), which must not wait for it.
func (g *Gateway) send(out channels.Outbound) {
	if out.ReplyTo != "" && g.share != nil && g.share.isAbandoned(out.Channel, out.ReplyTo) {
		g.logger.Info("not answering a message whose conversation this process lost; another process answers it", "session", out.SessionKey)
		return
	}
	ch := g.channel(out.Channel)
	if ch == nil {
		g.logger.Error("reply for an unknown channel dropped", "channel", out.Channel, "session", out.SessionKey)
		return
	}
	ctx, cancel := context.WithCancel(g.turnCtx)
	if g.turnCtx.Err() != nil {
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), lastSendTimeout)
	}
	defer cancel()
	err := ch.Send(ctx, out)
	switch {
	case err == nil:
	case errors.Is(err, channels.ErrDropped):
		// The channel has logged what was lost, once.
	default:
		g.logger.Error("reply not delivered", "channel", out.Channel, "session", out.SessionKey, "kind", out.Kind, "chars", len(out.Text), "err", err)
	}
}

// channel returns the channel added under name, nil when there is none.
func (g *Gateway) channel(name string) channels.Channel {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.channels[name]
}

func (g *Gateway) isAdmin(in channels.Inbound) bool {
	return in.Local || g.admins[in.Channel+":"+in.SenderID]
}
