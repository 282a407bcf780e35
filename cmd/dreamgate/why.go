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
// --scope narrows it to one. A running gateway answers it when there is
// one (its recall index is open already).
func cmdWhy(ctx context.Context, e *env, args []string) error {
	q, err := parseWhy(e, args)
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if asked, err := e.viaGateway(ctx, cfg, "why", args); asked {
		return err
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
	mem, _, err := memoryOn(cfg, db, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	return writeWhy(ctx, e, mem, hist, q, func(scopes []audience.Scope) (string, error) {
		return whySaid(ctx, e, cfg, mem, db, hist, q.words, scopes)
	})
}

// whyQuery is a why's words and scope.
type whyQuery struct {
	words string
	scope *scopeChoice
}

func parseWhy(e *env, args []string) (whyQuery, error) {
	fs := e.flags("why")
	q := whyQuery{scope: scopeFlag(fs)}
	if err := e.parse(fs, args, len(args)); err != nil {
		return q, err
	}
	q.words = strings.Join(fs.Args(), " ")
	if strings.TrimSpace(q.words) == "" {
		return q, &exitError{code: 2, err: errors.New("usage: dreamgate why [--scope NAME] <words>")}
	}
	return q, nil
}

// adminWhy is `why` asked of the running gateway: its recall index.
func adminWhy(ctx context.Context, e *env, p *gatewayProcess, args []string) error {
	q, err := parseWhy(e, args)
	if err != nil {
		return err
	}
	return writeWhy(ctx, e, p.a.mem, p.a.history, q, func(scopes []audience.Scope) (string, error) {
		return gateway.WhySaid(ctx, p.a.recallIndex(), q.words, scopes)
	})
}

// writeWhy prints the memory lines holding q's words, or, when none does,
// where the words were said (said searches the recall index). It exits 1
// when no line holds them.
func writeWhy(ctx context.Context, e *env, mem *memory.Memory, hist store.History, q whyQuery, said func([]audience.Scope) (string, error)) error {
	scopes := []audience.Scope{q.scope.scope}
	if !q.scope.one {
		var err error
		if scopes, err = mem.Scopes(); err != nil {
			return err
		}
	}
	ms, total, err := gateway.FindWhy(mem, scopes, q.words, whyLimit, hist)
	if err != nil {
		return err
	}
	text := gateway.WhyText(q.words, ms, total, func(m gateway.WhyMatch) string {
		return filepath.ToSlash(filepath.Join(m.Scope.Dir(), m.File)) + " (scope " + memory.Name(m.Scope) + ")"
	})
	if total == 0 {
		where, err := said(scopes)
		if err != nil {
			e.logger(slog.LevelWarn).Warn("the recall search failed", "err", err)
		}
		text += where
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
		Store:         recallStore(db),
		Dir:           recallDir(cfg.StateDir),
		Memory:        mem,
		History:       hist,
		Conversations: recallConversations{sessions},
		Logger:        logger.With("component", "recall"),
	})
	defer idx.Close()
	return gateway.WhySaid(ctx, idx, query, scopes)
}
