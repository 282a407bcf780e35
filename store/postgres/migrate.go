package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// migrations are the schema's numbered upgrades (migrations/README.md).
//
//go:embed migrations/*.sql
var migrations embed.FS

// versionTable is goose's record of the migrations applied.
const versionTable = "dreamgate_schema"

// migrate brings the schema up to this binary's newest migration. It
// holds a PostgreSQL advisory lock, one per schema, from the version check
// to the last migration: a second process starting at the same time waits
// for it (blocked in the server, not polling), then finds nothing to do,
// and a newer schema is refused before anything is changed.
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	defer conn.Release()
	const key = `hashtext('dreamgate schema ' || current_schema())`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		return fmt.Errorf("schema migrations: take the lock: %w", err)
	}
	defer func() {
		// A lock left by a cancelled unlock dies with the connection.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, files,
		goose.WithDisableGlobalRegistry(true),
		goose.WithTableName(versionTable))
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	known := latest(p)
	current, err := p.GetDBVersion(ctx)
	if err != nil && !errors.Is(err, database.ErrVersionNotFound) {
		return fmt.Errorf("read the database's schema version: %w", err)
	}
	if current > known {
		return fmt.Errorf("%w: it is at version %d and this dreamgate knows versions up to %d; run a dreamgate at least as new as the one that upgraded it", store.ErrSchemaTooNew, current, known)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate the database's schema: %w", err)
	}
	for _, r := range results {
		db.log.Info("database schema migrated", "version", r.Source.Version, "file", r.Source.Path)
	}
	return nil
}

// latest is the newest version among the embedded migrations.
func latest(p *goose.Provider) int64 {
	var v int64
	for _, s := range p.ListSources() {
		v = max(v, s.Version)
	}
	return v
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int64 {
	entries, _ := fs.Glob(migrations, "migrations/*.sql")
	var v int64
	for _, e := range entries {
		var n int64
		if _, err := fmt.Sscanf(e, "migrations/%d_", &n); err == nil {
			v = max(v, n)
		}
	}
	return v
}
