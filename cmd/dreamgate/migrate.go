package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// cmdMigrate is `migrate --to-postgres [DSN]`: a one-process workspace's
// program state, kept in files, copied into a PostgreSQL database (the
// DSN given, or store.postgres / DREAMGATE_POSTGRES_URL). The files are
// left as they were. Run twice, the second run changes nothing.
func cmdMigrate(ctx context.Context, e *env, args []string) error {
	fs := e.flags("migrate")
	toPostgres := fs.Bool("to-postgres", false, "copy the program state from the files into PostgreSQL")
	if err := e.parse(fs, args, 1); err != nil {
		return err
	}
	if !*toPostgres {
		return &exitError{code: 2, err: errors.New("usage: dreamgate migrate --to-postgres [DSN]")}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	dsn := cfg.Store.Postgres
	if fs.NArg() == 1 {
		dsn = fs.Arg(0)
	}
	if dsn == "" {
		return &exitError{code: 2, err: errors.New("dreamgate migrate --to-postgres: name the database: a DSN argument, store.postgres in the config or DREAMGATE_POSTGRES_URL")}
	}
	if err := postgres.CheckDSN(dsn); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("dreamgate migrate --to-postgres: %w", err)}
	}
	if ok, err := workspaceSetUp(cfg); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("no workspace at %s to migrate", cfg.Workspace)
		}
		return err
	}
	logger := e.logger(slog.LevelWarn)
	src, err := history.Open(filepath.Join(cfg.Workspace, filepath.FromSlash(workspace.MemoryDir)), history.Options{Logger: logger.With("component", "history")})
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	db, err := postgres.Open(ctx, dsn, postgres.Options{Logger: logger.With("component", "store")})
	cancel()
	if err != nil {
		return fmt.Errorf("open the PostgreSQL database: %w", err)
	}
	defer db.Close()
	from, done := filesState(src, cfg.Workspace, cfg.StateDir, time.Now())
	defer done()
	got, err := copyProgramState(databaseState(db), from)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, got.sentence("into PostgreSQL"))
	repo, err := migrateRepository(cfg, db, logger)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, repo)
	if cfg.Store.Postgres == "" {
		fmt.Fprintln(e.stdout, "The files are left in place. Set store.postgres (or DREAMGATE_POSTGRES_URL) to this database to use it.")
	}
	return nil
}

// programState is one engine's program state, as a copy reads or writes
// it.
type programState struct {
	archive       store.History
	conversations store.Conversations
	// inboxes lists the inboxes by name ("inbox", "inbox.shard-1"), and
	// inbox opens one (made when missing).
	inboxes func() ([]string, error)
	inbox   func(name string) (store.Inbox, error)
	ledger  store.DreamLedger
}

// filesState is the program state of the state directory's files (and
// archive's): the embedded engine as the copy reads or writes it. Its
// inbox files are closed by close.
func filesState(archive store.History, ws, stateDir string, now time.Time) (programState, func()) {
	var opened []*gateway.InboxFile
	return programState{
			archive:       archive,
			ledger:        dream.NewLedgerFiles(ws),
			conversations: session.NewFiles(sessionsDir(stateDir)),
			inboxes: func() ([]string, error) {
				paths, err := filepath.Glob(filepath.Join(stateDir, "inbox*.jsonl"))
				names := make([]string, len(paths))
				for i, p := range paths {
					names[i] = strings.TrimSuffix(filepath.Base(p), ".jsonl")
				}
				return names, err
			},
			inbox: func(name string) (store.Inbox, error) {
				f, err := gateway.OpenInboxFile(filepath.Join(stateDir, name+".jsonl"), now)
				if err == nil {
					opened = append(opened, f)
				}
				return f, err
			},
		}, func() {
			for _, f := range opened {
				_ = f.Close()
			}
		}
}

// databaseState is the PostgreSQL engine's program state.
func databaseState(db *postgres.DB) programState {
	return programState{
		archive:       db.Archive(),
		conversations: db.Conversations(),
		inboxes:       db.InboxNames,
		inbox:         func(name string) (store.Inbox, error) { return db.Inbox(name), nil },
		ledger:        db.DreamLedger(),
	}
}

// stateCopy says what a copy did.
type stateCopy struct {
	archive       store.ArchiveCopy
	conversations store.ConversationCopy
	// pending are the unanswered messages copied; ledger says whether
	// Dream's ledger was.
	pending int
	ledger  bool
}

// copyProgramState copies src's program state into dst through the
// store's copies (store.CopyArchive, …): the one copy between engines,
// which migrate and export share (a backup copies a running gateway's
// state its own way: this copy needs it stopped). It is idempotent.
func copyProgramState(dst, src programState) (stateCopy, error) {
	var c stateCopy
	into, ok := dst.archive.(store.ArchiveImporter)
	if !ok {
		return c, errors.New("copy the history archive: the destination cannot take entries as they are")
	}
	var err error
	if c.archive, err = store.CopyArchive(into, src.archive); err != nil {
		return c, fmt.Errorf("copy the history archive: %w", err)
	}
	if c.conversations, err = store.CopyConversations(dst.conversations, src.conversations); err != nil {
		return c, fmt.Errorf("copy the conversations: %w", err)
	}
	if c.ledger, err = store.CopyDreamLedger(dst.ledger, src.ledger); err != nil {
		return c, fmt.Errorf("copy Dream's ledger: %w", err)
	}
	names, err := src.inboxes()
	if err != nil {
		return c, fmt.Errorf("list the inboxes: %w", err)
	}
	for _, name := range names {
		from, err := src.inbox(name)
		if err != nil {
			return c, fmt.Errorf("open the inbox %s: %w", name, err)
		}
		to, err := dst.inbox(name)
		if err != nil {
			return c, fmt.Errorf("open the inbox %s: %w", name, err)
		}
		n, err := store.CopyInbox(to, from)
		if err != nil {
			return c, fmt.Errorf("copy the inbox %s: %w", name, err)
		}
		c.pending += n
	}
	return c, nil
}

// sentence tells the person what the copy did.
func (c stateCopy) sentence(where string) string {
	a, v := c.archive, c.conversations
	if a.Entries == 0 && !a.DreamMoved && v.Conversations == 0 && c.pending == 0 && !c.ledger {
		return fmt.Sprintf("Nothing to copy %s: its %d history entries, the Dream cursor (%d) and every conversation are there already.", where, a.Skipped, a.DreamCursor)
	}
	return fmt.Sprintf("Copied %s: %s (%d there already), the Dream cursor at %d; %s (%s); %s.", where,
		plural(a.Entries, "history entry", "history entries"), a.Skipped, a.DreamCursor,
		plural(v.Conversations, "conversation", "conversations"), plural(v.Lines, "message", "messages"),
		plural(c.pending, "unanswered message", "unanswered messages"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
