package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTimeout bounds one call of a contract's method.
const DefaultTimeout = 30 * time.Second

// Options configure Open; the zero value is ready to use.
type Options struct {
	// Logger receives what the engine reports (migrations applied). Nil
	// discards.
	Logger *slog.Logger
	// Now stamps appended entries. Nil is time.Now.
	Now func() time.Time
	// Timeout bounds each call (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxConns bounds the pool's connections (pgx's default when zero:
	// the larger of 4 and the CPUs).
	MaxConns int32
}

// DB is one PostgreSQL database holding a workspace's program state. It is
// safe for concurrent use, by any number of processes.
type DB struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	now     func() time.Time
	timeout time.Duration
	// life is cancelled by Close, ending every call in flight.
	life   context.Context
	cancel context.CancelFunc
}

// Open connects to the database dsn names (a URL, postgres://…, or
// key=value pairs), applies the migrations it lacks and returns it. A
// schema newer than this binary's is refused (store.ErrSchemaTooNew). The
// error never holds the DSN's password.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN %s: %s", RedactDSN(dsn), redactErr(err, dsn))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres %s: %s", RedactDSN(dsn), redactErr(err, dsn))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres %s: %s", RedactDSN(dsn), redactErr(err, dsn))
	}
	db := &DB{pool: pool, log: opts.Logger, now: opts.Now, timeout: opts.Timeout}
	if db.log == nil {
		db.log = slog.New(slog.DiscardHandler)
	}
	if db.now == nil {
		db.now = time.Now
	}
	if db.timeout <= 0 {
		db.timeout = DefaultTimeout
	}
	db.life, db.cancel = context.WithCancel(context.Background())
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close ends the calls in flight and closes every connection.
func (db *DB) Close() {
	db.cancel()
	db.pool.Close()
}

// call is the context of one contract call: the DB's life, bounded by
// its timeout.
func (db *DB) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(db.life, db.timeout)
}

// tx runs fn in a transaction, committed when fn returns nil and durable
// (on the server's disk) when tx returns.
func (db *DB) tx(fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := db.call()
	defer cancel()
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return fn(ctx, tx) })
}

// txAsync is tx whose commit does not wait for the server's disk
// (synchronous_commit off for this transaction): what it wrote survives
// this process dying at once, and the server's too unless its machine
// stops within a fraction of a second — what the embedded engine promises
// of the writes it does not fsync (a conversation's messages, the inbox),
// at a fraction of a durable commit's cost. A crash of the server's
// machine may lose the last such commits, never half of one.
func (db *DB) txAsync(fn func(ctx context.Context, tx pgx.Tx) error) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

const redacted = "xxxxx"

// kvPassword is built on first use: every command links this package, and
// package initialisation is paid before main runs (TestInitAllocatesLittle).
var kvPassword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
})

// RedactDSN returns dsn with its password (a URL's user info, a
// password=… pair or query parameter) replaced, for logs and errors.
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(a postgres URL that does not parse)"
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), redacted)
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword().ReplaceAllString(dsn, "${1}"+redacted)
}

// redactErr is err's text without the DSN's password, whatever pgx
// quoted of it, on one line.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if cfg, perr := pgx.ParseConfig(dsn); perr == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, redacted)
	}
	if strings.Contains(msg, dsn) {
		msg = strings.ReplaceAll(msg, dsn, RedactDSN(dsn))
	}
	return oneLine(msg)
}

// oneLine joins the lines of a pgx error: a connection that failed lists
// each address it tried on a line of its own, and each twice where it
// tried with TLS and without (sslmode=prefer), which an operator would
// read as that many errors.
func oneLine(msg string) string {
	if !strings.Contains(msg, "\n") {
		return msg
	}
	var b strings.Builder
	seen := map[string]bool{}
	for line := range strings.SplitSeq(msg, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		switch {
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// errNoRows reports pgx's "no rows" as such.
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// CheckDSN reports, without connecting, whether dsn is one pgx can use;
// the error holds no password.
func CheckDSN(dsn string) error {
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		return fmt.Errorf("not a PostgreSQL DSN (postgres://user@host/db or host=… dbname=…): %s", redactErr(err, dsn))
	}
	return nil
}
