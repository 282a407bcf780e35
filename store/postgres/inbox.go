package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
)

// Inbox is one gateway process's inbox in PostgreSQL (store.Inbox): rows
// of inbox_messages under its box's name, each platform message once by
// its primary key.
type Inbox struct {
	db  *DB
	box string
}

var _ store.Inbox = (*Inbox)(nil)

// Inbox returns the inbox named box ("inbox", or one per Discord shard).
func (db *DB) Inbox(box string) *Inbox { return &Inbox{db: db, box: box} }

// Accept implements store.Inbox: an answer older than KeepAnswered is
// forgotten first, as the files' inbox forgets it.
func (ib *Inbox) Accept(m store.InboxMessage) (bool, error) {
	known := false
	err := ib.db.txAsync(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM inbox_messages WHERE box = $1 AND channel = $2 AND message_id = $3
			AND answered_at < $4`, ib.box, m.Channel, m.MessageID, m.Accepted.Add(-store.KeepAnswered)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO inbox_messages (box, channel, message_id, conversation, origin, body, accepted_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (box, channel, message_id) DO NOTHING`,
			ib.box, m.Channel, m.MessageID, m.Conversation, string(m.Origin), m.Text, m.Accepted)
		known = tag.RowsAffected() == 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record an accepted message: %w", err)
	}
	return known, nil
}

// Answer implements store.Inbox.
func (ib *Inbox) Answer(channel, messageID string, at time.Time) error {
	err := ib.db.txAsync(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE inbox_messages SET answered_at = $4
			WHERE box = $1 AND channel = $2 AND message_id = $3 AND answered_at IS NULL`, ib.box, channel, messageID, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("record an answer: %w", err)
	}
	return nil
}

// Open implements store.Inbox.
func (ib *Inbox) Open() ([]store.InboxMessage, error) {
	ctx, cancel := ib.db.call()
	defer cancel()
	rows, err := ib.db.pool.Query(ctx, `SELECT channel, message_id, conversation, origin, body, accepted_at
		FROM inbox_messages WHERE box = $1 AND answered_at IS NULL ORDER BY seq`, ib.box)
	if err != nil {
		return nil, fmt.Errorf("read the inbox: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanInboxMessage)
	if err != nil {
		return nil, fmt.Errorf("read the inbox: %w", err)
	}
	return out, nil
}

// scanInboxMessage reads channel, message_id, conversation, origin, body
// and accepted_at.
func scanInboxMessage(r pgx.CollectableRow) (store.InboxMessage, error) {
	var m store.InboxMessage
	var origin string
	err := r.Scan(&m.Channel, &m.MessageID, &m.Conversation, &origin, &m.Text, &m.Accepted)
	m.Origin = []byte(origin)
	return m, err
}

// Forget implements store.Inbox.
func (ib *Inbox) Forget(now time.Time) error {
	ctx, cancel := ib.db.call()
	defer cancel()
	if _, err := ib.db.pool.Exec(ctx, `DELETE FROM inbox_messages WHERE box = $1 AND answered_at < $2`, ib.box, now.Add(-store.KeepAnswered)); err != nil {
		return fmt.Errorf("compact the inbox: %w", err)
	}
	return nil
}

// InboxNames lists the inboxes that hold a message.
func (db *DB) InboxNames() ([]string, error) {
	ctx, cancel := db.call()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT box FROM inbox_messages ORDER BY box`)
	if err != nil {
		return nil, fmt.Errorf("list the inboxes: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the inboxes: %w", err)
	}
	return names, nil
}
