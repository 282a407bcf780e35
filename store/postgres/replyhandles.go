package postgres

import (
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// ReplyHandles are the platforms' handles for answering a command, in
// PostgreSQL (store.ReplyHandles): the table reply_handles, which every
// process reads, so the one answering a command — another than the one
// that accepted it, or the same after a restart — answers through its
// handle, and a handle's uses are counted once across all of them.
type ReplyHandles struct{ db *DB }

var _ store.ReplyHandles = (*ReplyHandles)(nil)

// ReplyHandles returns the database's reply handles.
func (db *DB) ReplyHandles() *ReplyHandles { return &ReplyHandles{db: db} }

// Keep implements store.ReplyHandles; handles expired by the database's
// clock are dropped meanwhile.
func (h *ReplyHandles) Keep(key string, handle []byte, expires time.Time) error {
	ctx, cancel := h.db.call()
	defer cancel()
	_, err := h.db.pool.Exec(ctx, `WITH gone AS (DELETE FROM reply_handles WHERE expires_at < now() AND key <> $1)
		INSERT INTO reply_handles (key, handle, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET handle = excluded.handle, expires_at = excluded.expires_at, uses = 0`, key, handle, expires)
	if err != nil {
		return fmt.Errorf("keep reply handle: %w", err)
	}
	return nil
}

// Handle implements store.ReplyHandles.
func (h *ReplyHandles) Handle(key string, now time.Time) ([]byte, int, bool, error) {
	ctx, cancel := h.db.call()
	defer cancel()
	var handle []byte
	var uses int
	err := h.db.pool.QueryRow(ctx, `SELECT handle, uses FROM reply_handles WHERE key = $1 AND expires_at > $2`, key, now).Scan(&handle, &uses)
	if errNoRows(err) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("read reply handle: %w", err)
	}
	return handle, uses, true, nil
}

// Use implements store.ReplyHandles, in one statement: the row's lock
// orders the processes using it at once.
func (h *ReplyHandles) Use(key string, limit int, now time.Time) (bool, error) {
	ctx, cancel := h.db.call()
	defer cancel()
	tag, err := h.db.pool.Exec(ctx, `UPDATE reply_handles SET uses = uses + 1
		WHERE key = $1 AND uses < $2 AND expires_at > $3`, key, limit, now)
	if err != nil {
		return false, fmt.Errorf("use reply handle: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
