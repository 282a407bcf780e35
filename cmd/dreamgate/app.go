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
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// app holds the parts built from one config. Each subcommand builds only
// what it uses: a one-shot chat never opens the memory repository.
type app struct {
	cfg    Config
	logger *slog.Logger

	model    *llm.Client
	history  *consolidator.Store
	sessions *session.Store
	ws       *agent.Workspace
	repo     *gitstore.Store
}

// openWorkspace creates a missing workspace as onboard would (template files
// and the memory repository) and returns the files it created. A workspace
// that has its AGENTS.md is taken as set up, unless complete asks to add
// whatever template file is missing (onboard); nothing is ever overwritten.
func openWorkspace(cfg Config, logger *slog.Logger, complete bool) (created []string, err error) {
	if !complete {
		if _, err := os.Stat(filepath.Join(cfg.Workspace, "AGENTS.md")); err == nil {
			return nil, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("workspace %s: %w", cfg.Workspace, err)
		}
	}
	created, err = workspacetemplate.Install(cfg.Workspace)
	if err != nil {
		return created, err
	}
	if _, err := gitstore.Open(cfg.Workspace, gitstore.Options{}); err != nil {
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

func newApp(cfg Config, logger *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, logger: logger}
	if _, err := openWorkspace(cfg, logger, false); err != nil {
		return nil, err
	}
	a.model = llm.New(llm.Config{
		BaseURL:     cfg.LLM.BaseURL,
		APIKey:      cfg.LLM.APIKey,
		Model:       cfg.LLM.Model,
		MaxTokens:   cfg.LLM.MaxTokens,
		Temperature: cfg.LLM.Temperature,
		Timeout:     time.Duration(cfg.LLM.TimeoutSeconds) * time.Second,
		// Turns and archive calls (limited below), and Dream.
		Concurrency: cfg.Gateway.MaxConcurrentTurns + 1,
		Logger:      logger.With("component", "llm"),
	})
	var err error
	if a.history, err = consolidator.OpenStore(filepath.Join(cfg.Workspace, "memory"), logger.With("component", "history")); err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	if a.sessions, err = session.NewStore(filepath.Join(cfg.StateDir, "sessions"), logger.With("component", "sessions")); err != nil {
		return nil, err
	}
	if a.ws, err = agent.OpenWorkspace(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return a, nil
}

// openRepo opens the memory repository (creating it if needed).
func (a *app) openRepo() (*gitstore.Store, error) {
	if a.repo != nil {
		return a.repo, nil
	}
	r, err := gitstore.Open(a.cfg.Workspace, gitstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("open memory repository: %w", err)
	}
	a.repo = r
	return r, nil
}

func (a *app) close() {
	if a.sessions != nil {
		_ = a.sessions.Close()
	}
	if a.ws != nil {
		_ = a.ws.Close()
	}
}

// limited is the model as chat turns and archive calls see it: at most
// maxConcurrentTurns calls at once.
func (a *app) limited() gateway.Model {
	return gateway.LimitConcurrency(a.model, a.cfg.Gateway.MaxConcurrentTurns)
}

func (a *app) consolidator(model gateway.Model) *consolidator.Consolidator {
	return consolidator.New(model, a.history, consolidator.Config{
		ContextWindow:    a.cfg.LLM.ContextWindow,
		MaxTokens:        a.cfg.LLM.MaxTokens,
		ConsolidateRatio: a.cfg.Agent.ConsolidateRatio,
		TargetRatio:      a.cfg.Agent.TargetRatio,
	}, a.logger.With("component", "consolidator"))
}

// gateway builds the gateway with chat tools and, when asked, Dream.
func (a *app) gateway(withDream bool) (*gateway.Gateway, *dream.Dreamer) {
	model := a.limited()
	cons := a.consolidator(model)
	deps := gateway.Deps{
		Model:        model,
		Sessions:     a.sessions,
		Consolidator: cons,
		Prompts:      gateway.NewPromptBuilder(a.cfg.Workspace, a.logger),
		Tools:        agent.FileTools(a.ws, agent.ChatPolicy()),
		Usage:        a.model.Usage,
		Logger:       a.logger.With("component", "gateway"),
	}
	var d *dream.Dreamer
	if withDream {
		var err error
		if d, err = a.dreamer(); err != nil {
			a.logger.Warn("Dream is unavailable", "err", err)
			deps.DreamOff = "Dream is unavailable: the memory repository could not be opened; the reason is in the gateway log."
			if errors.Is(err, gitstore.ErrNestedRepository) {
				deps.DreamOff = "Dream is unavailable: the workspace is inside another git repository, so its memory cannot be versioned."
			}
		} else {
			deps.Dream = d
			deps.MemoryLog = a.repo
		}
	}
	g := gateway.New(gateway.Config{
		Workspace:         a.cfg.Workspace,
		ModelName:         a.cfg.LLM.Model,
		MaxToolIterations: a.cfg.Agent.MaxToolIterations,
		IdleCompactAfter:  time.Duration(a.cfg.Agent.IdleCompactAfterMinutes) * time.Minute,
		Admins:            a.cfg.Admins,
	}, deps)
	return g, d
}

func (a *app) dreamer() (*dream.Dreamer, error) {
	repo, err := a.openRepo()
	if err != nil {
		return nil, err
	}
	return dream.New(dream.Config{
		Workspace:     a.cfg.Workspace,
		Model:         a.cfg.Dream.Model,
		MaxBatchSize:  a.cfg.Dream.MaxBatchSize,
		MaxIterations: a.cfg.Dream.MaxIterations,
	}, dream.Deps{
		Model:   a.model,
		History: historyAdapter{a.history},
		Repo:    repo,
		Files:   a.ws,
		Logger:  a.logger.With("component", "dream"),
	})
}

// historyAdapter lets Dream read history.jsonl through the consolidator's
// store without the two packages importing each other (DESIGN §1).
type historyAdapter struct{ s *consolidator.Store }

func (h historyAdapter) Since(cursor, limit int) ([]dream.Entry, error) {
	es, err := h.s.Since(cursor, limit)
	if err != nil {
		return nil, err
	}
	out := make([]dream.Entry, len(es))
	for i, e := range es {
		out[i] = dream.Entry{Cursor: e.Cursor, Timestamp: e.Timestamp, Content: e.Content, SessionKey: e.SessionKey}
	}
	return out, nil
}

func (h historyAdapter) DreamCursor() (int, error)  { return h.s.DreamCursor() }
func (h historyAdapter) SetDreamCursor(n int) error { return h.s.SetDreamCursor(n) }
func (h historyAdapter) Compact(max int) (int, error) {
	return h.s.Compact(max)
}
func (h historyAdapter) Append(content, sessionKey string) (dream.Entry, error) {
	e, err := h.s.Append(content, sessionKey)
	return dream.Entry{Cursor: e.Cursor, Timestamp: e.Timestamp, Content: e.Content, SessionKey: e.SessionKey}, err
}

// shutdownContext bounds how long running turns may take to finish after a
// signal before they are cancelled.
func shutdownContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
