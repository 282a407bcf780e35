package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// Program state has two engines (store): the workspace's and the state
// directory's files, the default, and a PostgreSQL database when
// store.postgres (or DREAMGATE_POSTGRES_URL) names one. Without a DSN pgx
// is neither configured nor dialled: a one-process user's commands pay
// nothing for the second engine but its package initialisation.

// connectTimeout bounds connecting to the database and migrating it.
const connectTimeout = time.Minute

// openDatabase opens the PostgreSQL engine when the config names a
// database, and returns nil otherwise. Its errors hold no password.
func openDatabase(cfg Config, logger *slog.Logger) (*postgres.DB, error) {
	if cfg.Store.Postgres == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	// Room for Dream's lock and the ledger's beside the turns' queries.
	db, err := postgres.Open(ctx, cfg.Store.Postgres, postgres.Options{Logger: logger.With("component", "store"), MaxConns: 10})
	if err != nil {
		// Name where the DSN came from: one set in the service's
		// environment is not in the config file the operator reads.
		field := "store.postgres"
		if env := cfg.fromEnv[field]; env != "" {
			field += ", from the environment variable " + env
		}
		return nil, fmt.Errorf("open the program state in PostgreSQL (%s): %w", field, err)
	}
	return db, nil
}

// openSessions returns the conversations of the engine db says: the
// database's, or the state directory's files when db is nil.
func openSessions(cfg Config, db *postgres.DB, logger *slog.Logger) (*session.Store, error) {
	logger = logger.With("component", "sessions")
	if db != nil {
		// The state directory still holds what is this process's own (the
		// recall index, the admin socket, the gateway's log), owner-only.
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("create the state directory: %w", err)
		}
		return session.NewStoreOn(db.Conversations(), logger), nil
	}
	return session.NewStore(sessionsDir(cfg.StateDir), logger)
}

// openInbox gives the gateway the inbox of the engine in use: its rows in
// the database, under the name its file would have (one per Discord
// shard), or the file.
func (a *app) openInbox(g *gateway.Gateway) error {
	path := inboxPath(a.cfg)
	if a.db != nil {
		return g.OpenInboxIn(a.db.Inbox(strings.TrimSuffix(filepath.Base(path), ".jsonl")))
	}
	return g.OpenInbox(path)
}

// ledgerStore is where Dream's ledger is kept: the database's, or nil for
// memory/.dream_ledger.
func (a *app) ledgerStore() store.DreamLedger {
	if a.db == nil {
		return nil
	}
	return a.db.DreamLedger()
}

// posts is the record of answers posted, shared by the processes of one
// database; on files, this process's memory.
func (a *app) posts() channels.PostLog {
	if a.db != nil {
		return a.db.Posts()
	}
	return &store.MemoryPosts{}
}

// replyHandlesFile holds, on files, the platforms' handles for answering
// the slash commands accepted in the last half hour or so.
const replyHandlesFile = "reply-handles.json"

// replyHandles keep slash commands' response_urls and interaction tokens
// until answered, so a restart (or, on a database, another process)
// answers through them: the database's rows, or a file in the state
// directory.
func (a *app) replyHandles() channels.ReplyHandles {
	if a.db != nil {
		return a.db.ReplyHandles()
	}
	return store.OpenReplyHandlesFile(filepath.Join(a.cfg.StateDir, replyHandlesFile))
}

// pageKeyName is the memory page's signing key's name among the
// database's secrets (web.key in the state directory on files).
const pageKeyName = "web.key"

// pageKey is the memory page's signing key, made on first use: the
// database's secret, or the state directory's web.key.
func (a *app) pageKey(logger *slog.Logger) ([]byte, error) {
	if a.db == nil {
		return webKey(a.cfg.StateDir, logger)
	}
	return a.db.Secrets().Secret(pageKeyName, newPageKey)
}

// openArchive returns the archive of the engine db says: the database's,
// or memory/history.jsonl's when db is nil.
func openArchive(cfg Config, db *postgres.DB, logger *slog.Logger, afterWrite func(string)) (store.History, error) {
	if db != nil {
		return db.Archive(), nil
	}
	h, err := history.Open(filepath.Join(cfg.Workspace, filepath.FromSlash(workspace.MemoryDir)),
		history.Options{Logger: logger.With("component", "history"), AfterWrite: afterWrite})
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	return h, nil
}
