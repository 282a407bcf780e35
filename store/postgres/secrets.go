package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
)

// Secrets are the database's secrets (store.Secrets).
type Secrets struct{ db *DB }

var _ store.Secrets = (*Secrets)(nil)

// Secrets returns the database's secrets.
func (db *DB) Secrets() *Secrets { return &Secrets{db: db} }

// Secret implements store.Secrets: the first insert wins, and every
// caller reads what it kept.
func (s *Secrets) Secret(name string, make func() ([]byte, error)) ([]byte, error) {
	if v, ok, err := s.Lookup(name); err != nil || ok {
		return v, err
	}
	fresh, err := make()
	if err != nil {
		return nil, err
	}
	var kept []byte
	err = s.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&kept)
	})
	if err != nil {
		return nil, fmt.Errorf("keep the secret %s: %w", name, err)
	}
	return kept, nil
}

// Lookup implements store.Secrets.
func (s *Secrets) Lookup(name string) ([]byte, bool, error) {
	ctx, cancel := s.db.call()
	defer cancel()
	var v []byte
	err := s.db.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&v)
	if errNoRows(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the secret %s: %w", name, err)
	}
	return v, true, nil
}

// Nonces are the database's one-time values of one kind (store.Nonces),
// seen by every process and across restarts.
type Nonces struct {
	db   *DB
	kind string
}

var _ store.Nonces = (*Nonces)(nil)

// Nonces returns the one-time values of kind ("web-link").
func (db *DB) Nonces(kind string) *Nonces { return &Nonces{db: db, kind: kind} }

// Use implements store.Nonces: expired ones are dropped in the same
// transaction.
func (n *Nonces) Use(nonce string, expires time.Time) (bool, error) {
	first := false
	err := n.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM used_nonces WHERE kind = $1 AND expires_at <= now()`, n.kind); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO used_nonces (kind, nonce, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (kind, nonce) DO NOTHING`, n.kind, nonce, expires)
		first = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record a used %s: %w", n.kind, err)
	}
	return first, nil
}

// Used implements store.Nonces.
func (n *Nonces) Used(nonce string, now time.Time) (bool, error) {
	ctx, cancel := n.db.call()
	defer cancel()
	var used bool
	err := n.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM used_nonces WHERE kind = $1 AND nonce = $2 AND expires_at > $3)`,
		n.kind, nonce, now).Scan(&used)
	if err != nil {
		return false, fmt.Errorf("read a used %s: %w", n.kind, err)
	}
	return used, nil
}
