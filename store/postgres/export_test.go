package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// BackendPID is the server process of the connection holding p's claims,
// for tests that end it as a dying process's would end.
func (p *Process) BackendPID() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn.PgConn().PID()
}

// Fenced runs fn under name's lease at epoch.
func (db *DB) Fenced(name string, epoch int64, fn func(ctx context.Context) error) error {
	return db.fenced(name, epoch, func(ctx context.Context, _ pgx.Tx) error { return fn(ctx) })
}

// Exec runs one statement.
func (db *DB) Exec(sql string, args ...any) error {
	ctx, cancel := db.call()
	defer cancel()
	_, err := db.pool.Exec(ctx, sql, args...)
	return err
}

// RepositoryBytes is the content of every object the memory repository
// stores, for the benchmarks.
func RepositoryBytes(db *DB) (int64, error) {
	ctx, cancel := db.call()
	defer cancel()
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT coalesce(sum(length(data)), 0) FROM git_objects`).Scan(&n)
	return n, err
}
