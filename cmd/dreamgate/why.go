package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/recall"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// whyLimit bounds the lines `dreamgate why` shows.
const whyLimit = 50

// cmdWhy is `why <words>`, the CLI twin of /why: where the remembered
// lines holding the words came from. The operator reads every scope;
// --scope narrows it to one.
func cmdWhy(ctx context.Context, e *env, args []string) error {
	fs := e.flags("why")
	scope := scopeFlag(fs)
	if err := e.parse(fs, args, len(args)); err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return &exitError{code: 2, err: errors.New("usage: dreamgate why [--scope NAME] <words>")}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	mem := memoryOf(cfg)
	scopes := []audience.Scope{scope.scope}
	if !scope.one {
		if scopes, err = mem.Scopes(); err != nil {
			return err
		}
	}
	db, err := openDatabase(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
	}
	hist, err := openArchive(cfg, db, e.logger(slog.LevelWarn), nil)
	if err != nil {
		return err
	}
	ms, total, err := gateway.FindWhy(mem, scopes, query, whyLimit, hist)
	if err != nil {
		return err
	}
	text := gateway.WhyText(query, ms, total, func(m gateway.WhyMatch) string {
		return filepath.ToSlash(filepath.Join(m.Scope.Dir(), m.File)) + " (scope " + memory.Name(m.Scope) + ")"
	})
	if total == 0 {
		said, err := whySaid(ctx, e, cfg, mem, db, hist, query, scopes)
		if err != nil {
			e.logger(slog.LevelWarn).Warn("the recall search failed", "err", err)
		}
		text += said
	}
	fmt.Fprintln(e.stdout, text)
	if total == 0 {
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// whySaid searches the recall index, as /why does, for where the words
// were said before; the search brings the index up to date first, waiting
// at most a few seconds.
func whySaid(ctx context.Context, e *env, cfg Config, mem *memory.Memory, db *postgres.DB, hist store.History, query string, scopes []audience.Scope) (string, error) {
	logger := e.logger(slog.LevelWarn)
	sessions, err := openSessions(cfg, db, logger)
	if err != nil {
		return "", err
	}
	defer sessions.Close()
	idx := recall.Open(recall.Options{
		Dir:           recallDir(cfg.StateDir),
		Memory:        mem,
		History:       hist,
		Conversations: recallConversations{sessions},
		Logger:        logger.With("component", "recall"),
	})
	defer idx.Close()
	return gateway.WhySaid(ctx, idx, query, scopes)
}
