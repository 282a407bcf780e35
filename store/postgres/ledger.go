package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is Dream's ledger in PostgreSQL (store.DreamLedger): the record
// in dream_ledger's one row, the locks as advisory locks of the schema,
// each held by a connection of the pool for as long as it is held, so a
// process that dies releases them with its connections.
type Ledger struct{ db *DB }

var _ store.DreamLedger = (*Ledger)(nil)

// DreamLedger returns the database's Dream ledger.
func (db *DB) DreamLedger() *Ledger { return &Ledger{db: db} }

const (
	recordLockKey = `hashtext('dreamgate dream ledger ' || current_schema())`
	dreamLockKey  = `hashtext('dreamgate dream ' || current_schema())`
)

// Record implements store.DreamLedger.
func (l *Ledger) Record() ([]byte, bool, error) {
	ctx, cancel := l.db.call()
	defer cancel()
	var rec *string
	if err := l.db.pool.QueryRow(ctx, `SELECT record FROM dream_ledger WHERE id = 1`).Scan(&rec); err != nil {
		return nil, false, fmt.Errorf("read dream ledger: %w", err)
	}
	if rec == nil {
		return nil, false, nil
	}
	return []byte(*rec), true, nil
}

// PutRecord implements store.DreamLedger.
func (l *Ledger) PutRecord(rec []byte) error {
	ctx, cancel := l.db.call()
	defer cancel()
	if _, err := l.db.pool.Exec(ctx, `UPDATE dream_ledger SET record = $1, updated_at = now() WHERE id = 1`, string(rec)); err != nil {
		return fmt.Errorf("write dream ledger: %w", err)
	}
	return nil
}

// LockRecord implements store.DreamLedger: it waits in the server.
func (l *Ledger) LockRecord() (func(), error) {
	conn, err := l.hold(`SELECT pg_advisory_lock(`+recordLockKey+`)`, nil)
	if err != nil {
		return nil, fmt.Errorf("dream ledger lock: %w", err)
	}
	return l.releaser(conn, recordLockKey, ""), nil
}

// TryDream implements store.DreamLedger.
func (l *Ledger) TryDream(now time.Time) (func(), bool, time.Time, error) {
	var got bool
	conn, err := l.hold(`SELECT pg_try_advisory_lock(`+dreamLockKey+`)`, &got)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("dream lock: %w", err)
	}
	ctx, cancel := l.db.call()
	defer cancel()
	if !got {
		var since *time.Time
		_ = conn.QueryRow(ctx, `SELECT dreaming_since FROM dream_ledger WHERE id = 1`).Scan(&since)
		conn.Release()
		if since == nil {
			return nil, false, time.Time{}, nil
		}
		return nil, false, *since, nil
	}
	// The start time is for the processes refused meanwhile; the lock is
	// the advisory lock, so a failed write only costs them that detail.
	_, _ = conn.Exec(ctx, `UPDATE dream_ledger SET dreaming_since = $1 WHERE id = 1`, now)
	return l.releaser(conn, dreamLockKey, `UPDATE dream_ledger SET dreaming_since = NULL WHERE id = 1`), true, now, nil
}

// hold takes a connection of the pool and runs sql on it, scanning into
// dst when set; the connection stays taken.
func (l *Ledger) hold(sql string, dst *bool) (*pgxpool.Conn, error) {
	ctx, cancel := context.WithTimeout(l.db.life, 10*time.Minute)
	defer cancel()
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if dst != nil {
		err = conn.QueryRow(ctx, sql).Scan(dst)
	} else {
		_, err = conn.Exec(ctx, sql)
	}
	if err != nil {
		conn.Release()
		return nil, err
	}
	return conn, nil
}

// releaser unlocks key on conn (after running before, when set) and gives
// the connection back, once. A connection whose unlock failed is closed,
// which releases its locks.
func (l *Ledger) releaser(conn *pgxpool.Conn, key, before string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), l.db.timeout)
			defer cancel()
			if before != "" {
				_, _ = conn.Exec(ctx, before)
			}
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
				_ = conn.Conn().Close(ctx)
			}
			conn.Release()
		})
	}
}

var _ store.FencedLedger = (*Ledger)(nil)

// PutRecordFenced implements store.FencedLedger: the record is written in
// the transaction that checks the fence.
func (l *Ledger) PutRecordFenced(rec []byte, f store.Fence) error {
	err := l.db.fenced(f.Lease, f.Epoch, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE dream_ledger SET record = $1, updated_at = now() WHERE id = 1`, string(rec))
		return err
	})
	if err != nil {
		return fmt.Errorf("write dream ledger: %w", err)
	}
	return nil
}
