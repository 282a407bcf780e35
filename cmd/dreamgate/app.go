package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/mcp"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/metrics"
	"github.com/dreamgate/dreamgate/recall"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// app holds the parts built from one config. Each subcommand builds only
// what it uses: a one-shot chat never opens the memory repository.
type app struct {
	cfg    Config
	logger *slog.Logger

	// model serves every purpose through its chain of models (one model,
	// the llm keys', unless the config names several).
	model   *llm.Router
	history store.History
	// db is the PostgreSQL engine's database, nil on the embedded engine.
	db       *postgres.DB
	sessions *session.Store
	ws       *workspace.Root
	mem      *memory.Memory
	repo     *gitstore.Store
	mcp      *mcp.Manager // nil until a gateway with MCP servers is built
	recall   *recall.Index
	// afterWrite is the test-only kill switch's hook (testkill.go), nil
	// unless the switch is on.
	afterWrite func(point string)
	// now is the test-only clock switch's clock (testclock.go), nil
	// unless the switch is on.
	now func() time.Time
	// metrics, when set before the gateway is built (dreamgate gateway),
	// counts model calls, archives, turns and Dream runs.
	metrics *metrics.Metrics
	// prompts is the prompt builder (promptBuilder); dreamOff says why
	// Dream is unavailable when it was asked for and could not be built.
	prompts  *gateway.PromptBuilder
	dreamOff string
	// webLinks, set when web.enabled before the gateway is built, gives
	// /web-link the memory page's sign-in links once the page runs.
	webLinks *webLinks
	// tokens is the one tokenizer of the process: the consolidator's
	// budget and the prompt's memory budget count with it, so its
	// vocabulary is loaded at most once.
	tokens *consolidator.Counter
}

// openWorkspace creates a missing workspace as onboard would (template files
// and the memory repository) and returns the files it created. A workspace
// that has its AGENTS.md is taken as set up, unless complete asks to add
// whatever template file is missing (onboard); nothing is ever overwritten.
func openWorkspace(cfg Config, logger *slog.Logger, complete bool) (created []string, err error) {
	tightenModes(logger, cfg)
	if !complete {
		if ok, err := workspaceSetUp(cfg); ok || err != nil {
			return nil, err
		}
	}
	created, err = workspacetemplate.Install(cfg.Workspace)
	if err != nil {
		return created, err
	}
	ws, err := workspace.Open(cfg.Workspace)
	if err != nil {
		return created, fmt.Errorf("open workspace: %w", err)
	}
	defer ws.Close()
	if cfg.Store.Postgres != "" {
		// The memory repository is the database's (memrepo.go): the
		// workspace folder holds none.
	} else if _, err := gitstore.Open(cfg.Workspace, repoOptions(ws, logger, nil)); err != nil {
		if errors.Is(err, gitstore.ErrNestedRepository) {
			logger.Warn("memory versioning is off: the workspace is inside another git repository", "workspace", cfg.Workspace, "err", err)
		} else {
			return created, fmt.Errorf("init memory repository: %w", err)
		}
	}
	if len(created) > 0 {
		logger.Info("workspace files created", "workspace", cfg.Workspace, "files", len(created))
	}
	return created, nil
}

// llmNames tells the model client where its key, endpoint and model were
// set, so that its hints name the variable the operator exported rather
// than a config key the file may not even hold.
func (c Config) llmNames() llm.Names {
	n := llm.Names{APIKey: c.fromEnv["llm.apiKey"], BaseURL: c.fromEnv["llm.baseURL"], Model: c.fromEnv["llm.model"]}
	if c.LLM.APIKey == "" {
		n.APIKey = "OPENAI_API_KEY or llm.apiKey" // where one can be set
	}
	return n
}

// workspaceSetUp reports whether the workspace has been created (onboard,
// or the first command that writes): its AGENTS.md is there.
func workspaceSetUp(cfg Config) (bool, error) {
	_, err := os.Stat(filepath.Join(cfg.Workspace, "AGENTS.md"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workspace %s: %w", cfg.Workspace, err)
	}
	return true, nil
}

func newApp(cfg Config, logger *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, logger: logger, afterWrite: killHook(cfg.getenv, logger), now: testClock(cfg.getenv, logger),
		tokens: consolidator.NewCounter(), mem: memoryOf(cfg).WithLogger(logger)}
	if _, err := openWorkspace(cfg, logger, false); err != nil {
		return nil, err
	}
	a.model = newModels(cfg, logger)
	var err error
	if a.db, err = openDatabase(cfg, logger); err != nil {
		return nil, err
	}
	if a.history, err = openArchive(cfg, a.db, logger, a.afterWrite); err != nil {
		a.close()
		return nil, err
	}
	if a.sessions, err = openSessions(cfg, a.db, logger); err != nil {
		a.close()
		return nil, err
	}
	a.sessions.SetAfterWrite(a.afterWrite)
	if a.ws, err = workspace.Open(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	// Whatever the config says, no file tool reaches the conversations.
	a.ws.Forbid(sessionsDir(cfg.StateDir))
	if a.db != nil {
		// The memory repository is the database's: memory is read from
		// its commits (memrepo.go).
		if a.repo, err = openDBRepo(cfg, a.db, a.ws, logger, a.afterWrite); err != nil {
			a.close()
			return nil, err
		}
		a.mem = memory.New(memory.NewCommitted(a.repo), !cfg.Memory.Scoped).WithLogger(a.logger)
	}
	return a, nil
}

// openRepo opens the memory repository (creating it if needed).
func (a *app) openRepo() (*gitstore.Store, error) {
	if a.repo != nil {
		return a.repo, nil
	}
	r, err := gitstore.Open(a.cfg.Workspace, repoOptions(a.ws, a.logger, a.afterWrite))
	if err != nil {
		return nil, fmt.Errorf("open memory repository: %w", err)
	}
	a.repo = r
	return r, nil
}

// repoOptions: the memory repository tracks the workspace's memory files,
// the instructions (AGENTS.md, prompts/dream.md) and every scope folder's
// memory files, each scope on a line of history of its own (its commits
// write its files alone, however many scopes there are), and rewrites them
// (a restore) through the workspace's atomic write.
// Its warnings (a damaged branch repaired, a stale lock) go to the log;
// afterWrite is the test-only kill switch (testkit.go), nil otherwise.
func repoOptions(ws *workspace.Root, logger *slog.Logger, afterWrite func(string)) gitstore.Options {
	return gitstore.Options{Tracked: workspace.TrackedFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir,
		Files: ws, Logger: logger.With("component", "gitstore"), AfterWrite: afterWrite}
}

func (a *app) close() {
	if a.sessions != nil {
		_ = a.sessions.Close()
	}
	if a.ws != nil {
		_ = a.ws.Close()
	}
	if a.mcp != nil {
		_ = a.mcp.Close()
	}
	if a.recall != nil {
		_ = a.recall.Close()
	}
	if a.db != nil {
		a.db.Close()
	}
}

// limited is the model as chat turns and archive calls see it: at most
// maxConcurrentTurns calls at once.
func (a *app) limited() gateway.Model {
	return gateway.LimitConcurrency(a.observedModel(), a.cfg.Gateway.MaxConcurrentTurns)
}

// consolidator budgets chat prompts by the chat chain's smallest window and
// archive calls by the archive chain's, so that whichever model of a chain
// serves, the prompt fits it.
func (a *app) consolidator(model gateway.Model) *consolidator.Consolidator {
	chat, archive := a.cfg.budget(llm.PurposeChat), a.cfg.budget(llm.PurposeArchive)
	return consolidator.New(model, a.history, consolidator.Config{
		ContextWindow:        chat.window,
		MaxTokens:            chat.maxTokens,
		ArchiveContextWindow: archive.window,
		ArchiveMaxTokens:     archive.maxTokens,
		ConsolidateRatio:     a.cfg.Agent.ConsolidateRatio,
		TargetRatio:          a.cfg.Agent.TargetRatio,
		Scopes:               a.mem,
		ConversationTokens:   a.cfg.Agent.ConversationTokens,
		Counter:              a.tokens,
		// The Recent history shows a scope's entries its own Dream has
		// not read, not those past the frontier of every scope.
		Folded: a.ledger(nil),
	}, a.logger.With("component", "consolidator"))
}

// promptBuilder is the one prompt builder of the process: chat turns fit
// memory into their prompts with it, and the memory page's gauge asks it
// what a scope costs there.
func (a *app) promptBuilder() *gateway.PromptBuilder {
	if a.prompts == nil {
		a.prompts = gateway.NewPromptBuilder(a.cfg.Workspace, a.mem, a.logger).WithHotMemory(gateway.HotMemory{
			Tokens: a.cfg.hotTokens(), Counter: a.tokens,
		})
	}
	return a.prompts
}

// gateway builds the gateway with chat tools and, when asked, Dream.
func (a *app) gateway(withDream bool) (*gateway.Gateway, *dream.Dreamer) {
	model := a.limited()
	cons := a.consolidator(model)
	guestPolicy, adminPolicy := chatPolicies(a.db)
	deps := gateway.Deps{
		Model:        model,
		Sessions:     a.sessions,
		Consolidator: a.observedArchives(recallArchives(cons, a.recallIndex())),
		Prompts:      a.promptBuilder(),
		Memory:       a.mem,
		// People who are not admins may write only the memory files (none
		// when memory is the database's: memrepo.go).
		Tools:      agent.FileTools(a.ws, guestPolicy),
		AdminTools: agent.FileTools(a.ws, adminPolicy),
		ScopeFiles: a.scopeFolders(),
		MemoryCopy: a.memoryCopy(),
		Provenance: a.history,
		WebLinks:   a.webLinksDep(),
		Recall:     a.recallIndex(),
		Usage:      a.model.Usage,
		ModelState: a.model.State,
		Models:     a.modelLines(),
		Observer:   a.gatewayObserver(),
		Logger:     a.logger.With("component", "gateway"),
		Now:        a.now, // nil: the real clock
	}
	if m := a.mcpManager(); m != nil {
		// Chat turns only: Dream keeps its memory-file tools. /status counts
		// the running servers' tools through gateway.RunningTools.
		var tt interface {
			gateway.TurnTools
			gateway.RunningTools
		} = mcpTools{m}
		deps.TurnTools = tt
	}
	var d *dream.Dreamer
	if withDream {
		var err error
		if d, err = a.dreamer(); err != nil {
			a.logger.Warn("Dream is unavailable", "err", err)
			deps.DreamOff = "Dream is unavailable: the memory repository could not be opened; the reason is in the gateway log."
			switch {
			case errors.Is(err, gitstore.ErrNestedRepository):
				deps.DreamOff = "Dream is unavailable: the workspace is inside another git repository, so its memory cannot be versioned."
			case errors.Is(err, gitstore.ErrDamaged):
				deps.DreamOff = dreamtext.Damaged
			}
			a.dreamOff = deps.DreamOff
		} else {
			deps.Dream = d
			deps.MemoryLog = a.repo
		}
	}
	if a.cfg.Dream.Enabled {
		// A scope over its budget in a prompt gets a deep Dream at the
		// next Dream, this process's or the running gateway's (a one-shot
		// chat records the request in the ledger's file for it).
		deps.Deep = a.ledger(d)
	}
	g := gateway.New(gateway.Config{
		Workspace:         a.cfg.Workspace,
		ModelName:         a.cfg.LLM.Model,
		MaxToolIterations: a.cfg.Agent.MaxToolIterations,
		IdleCompactAfter:  time.Duration(a.cfg.Agent.IdleCompactAfterMinutes) * time.Minute,
		Admins:            a.cfg.Admins,
		AnswerPending:     time.Duration(a.cfg.Gateway.AnswerPendingMinutes) * time.Minute,
		MaxMessageBytes:   a.cfg.Gateway.MaxMessageBytes,
	}, deps)
	return g, d
}

// ledger is Dream's progress: the Dreamer's own when Dream runs (nil
// otherwise), else one for the retention and the readers.
func (a *app) ledger(d *dream.Dreamer) *dream.Ledger {
	if d != nil {
		return d.Ledger()
	}
	return dream.NewLedgerIn(a.cfg.Workspace, a.history, a.ledgerStore(), a.logger.With("component", "dream"))
}

func (a *app) dreamer() (*dream.Dreamer, error) {
	repo, err := a.openRepo()
	if err != nil {
		return nil, err
	}
	// Phase 1 and the deep Dream fit their calls into the analysis chain's
	// smallest window.
	window := a.cfg.budget(llm.PurposeDreamAnalysis)
	return dream.New(dream.Config{
		Workspace:     a.cfg.Workspace,
		Model:         a.cfg.Dream.Model,
		MaxBatchSize:  a.cfg.Dream.MaxBatchSize,
		MaxIterations: a.cfg.Dream.MaxIterations,
		// Each batch has Dream's own deadline; the run reads at most this
		// many of them.
		MaxBatchesPerRun: a.cfg.Dream.MaxBatchesPerRun,
		EphemeralDays:    a.cfg.Dream.EphemeralDays,
		DeepEvery:        a.cfg.Dream.DeepEvery,
		DeepAtShare:      a.cfg.Dream.DeepAtShare,
		// The prompt's budget, counted with the prompt's tokenizer: a
		// scope Dream leaves under it is under it in every prompt.
		HotTokens: a.cfg.hotTokens(),
		Window:    window.window,
		MaxTokens: window.maxTokens,
	}, dream.Deps{
		LedgerStore: a.ledgerStore(),
		Counter:     a.tokens,
		Model:       a.observedModel(),
		History:     a.history,
		Repo:        repo,
		Files:       a.ws,
		Memory:      a.mem,
		Observer:    a.dreamObserver(),
		Logger:      a.logger.With("component", "dream"),
		Hook:        a.afterWrite, // the test-only kill switch (testkill.go)
		Now:         a.now,        // the test-only clock (testclock.go); nil: the real one
	})
}

// shutdownGrace bounds how long running turns may take to finish after a
// signal before they are cancelled.
const shutdownGrace = 30 * time.Second

// shutdownContext is the shutdown's deadline: shutdownGrace from now.
func shutdownContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), shutdownGrace)
}

// chatShutdownContext is the shutdown's deadline once the terminal chat's
// input ended (or sig did). Lines piped in are a script's: those still
// queued when its input ends are answered however long they take, and the
// grace starts only when sig ends. Otherwise it starts now.
func (e *env) chatShutdownContext(sig context.Context, pipedEnded bool) (context.Context, context.CancelFunc) {
	grace := shutdownGrace
	if e.shutdownGrace > 0 {
		grace = e.shutdownGrace
	}
	if !pipedEnded || sig.Err() != nil {
		return context.WithTimeout(context.Background(), grace)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-sig.Done():
		case <-ctx.Done():
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
