package postgres

import (
	"context"
	"fmt"

	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
)

// Conversations are gateway/session's conversations in PostgreSQL
// (store.Conversations): conversations (a row per generation, its
// metadata) and conversation_lines (a row per message). A key's live
// generation is unique (a partial unique index), and a line's place is its
// primary key, so a second writer of the same place fails instead of
// interleaving.
type Conversations struct{ db *DB }

var _ store.Conversations = (*Conversations)(nil)

// Conversations returns the database's conversations.
func (db *DB) Conversations() *Conversations { return &Conversations{db: db} }

const conversationColumns = "key, id, live, meta, lines, modified"

// ensure makes the generation, live, unless it exists.
func ensure(ctx context.Context, tx pgx.Tx, key, id string) error {
	_, err := tx.Exec(ctx, `INSERT INTO conversations (key, id) VALUES ($1, $2) ON CONFLICT (key, id) DO NOTHING`, key, id)
	return err
}

// Append implements store.ConversationWriter.
func (c *Conversations) Append(key, id string, at int, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	err := c.db.txAsync(func(ctx context.Context, tx pgx.Tx) error {
		if err := ensure(ctx, tx, key, id); err != nil {
			return err
		}
		rows := make([][]any, len(lines))
		for i, l := range lines {
			rows[i] = []any{key, id, at + i, string(l)}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"conversation_lines"}, []string{"key", "id", "idx", "line"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE conversations SET lines = greatest(lines, $3), modified = now() WHERE key = $1 AND id = $2`, key, id, at+len(lines))
		return err
	})
	if err != nil {
		return fmt.Errorf("append to conversation %s: %w", key, err)
	}
	return nil
}

// PutMeta implements store.ConversationWriter.
func (c *Conversations) PutMeta(key, id string, meta []byte) error {
	err := c.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := ensure(ctx, tx, key, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE conversations SET meta = $3 WHERE key = $1 AND id = $2`, key, id, string(meta))
		return err
	})
	if err != nil {
		return fmt.Errorf("write conversation %s metadata: %w", key, err)
	}
	return nil
}

// SetAside implements store.ConversationWriter.
func (c *Conversations) SetAside(key, id string) error {
	ctx, cancel := c.db.call()
	defer cancel()
	if _, err := c.db.pool.Exec(ctx, `UPDATE conversations SET live = false WHERE key = $1 AND id = $2`, key, id); err != nil {
		return fmt.Errorf("set conversation %s aside: %w", key, err)
	}
	return nil
}

// Live implements store.ConversationReader.
func (c *Conversations) Live(key string) (store.Conversation, bool, error) {
	return c.one(`SELECT `+conversationColumns+` FROM conversations WHERE key = $1 AND live`, key)
}

// Generation implements store.ConversationReader.
func (c *Conversations) Generation(key, id string) (store.Conversation, bool, error) {
	return c.one(`SELECT `+conversationColumns+` FROM conversations WHERE key = $1 AND id = $2`, key, id)
}

func (c *Conversations) one(sql string, args ...any) (store.Conversation, bool, error) {
	ctx, cancel := c.db.call()
	defer cancel()
	rows, err := c.db.pool.Query(ctx, sql, args...)
	if err != nil {
		return store.Conversation{}, false, fmt.Errorf("read conversation: %w", err)
	}
	got, err := pgx.CollectRows(rows, scanConversation)
	if err != nil {
		return store.Conversation{}, false, fmt.Errorf("read conversation: %w", err)
	}
	if len(got) == 0 {
		return store.Conversation{}, false, nil
	}
	return got[0], true, nil
}

// Lines implements store.ConversationReader.
func (c *Conversations) Lines(key, id string, from, to int) ([][]byte, error) {
	ctx, cancel := c.db.call()
	defer cancel()
	var upto *int
	if to > 0 {
		upto = &to
	}
	rows, err := c.db.pool.Query(ctx, `SELECT line FROM conversation_lines
		WHERE key = $1 AND id = $2 AND idx >= $3 AND ($4::integer IS NULL OR idx < $4) ORDER BY idx`, key, id, from, upto)
	if err != nil {
		return nil, fmt.Errorf("read conversation %s: %w", key, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
		var s string
		err := r.Scan(&s)
		return []byte(s), err
	})
	if err != nil {
		return nil, fmt.Errorf("read conversation %s: %w", key, err)
	}
	return out, nil
}

// List implements store.ConversationReader.
func (c *Conversations) List() ([]store.Conversation, error) {
	ctx, cancel := c.db.call()
	defer cancel()
	rows, err := c.db.pool.Query(ctx, `SELECT `+conversationColumns+` FROM conversations ORDER BY key, created_at`)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanConversation)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

func scanConversation(r pgx.CollectableRow) (store.Conversation, error) {
	var c store.Conversation
	var meta *string
	err := r.Scan(&c.Key, &c.ID, &c.Live, &meta, &c.Lines, &c.Modified)
	if meta != nil {
		c.Meta = []byte(*meta)
	}
	return c, err
}
