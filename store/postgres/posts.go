package postgres

import (
	"fmt"
	"sync/atomic"

	"github.com/dreamgate/dreamgate/store"
)

// Posts is the database's post record (store.Posts), seen by every
// process.
type Posts struct {
	db *DB
	// records counts Record calls: one in a thousand also forgets posts
	// older than store.KeepPosts.
	records atomic.Int64
}

var _ store.Posts = (*Posts)(nil)

// Posts returns the database's post record.
func (db *DB) Posts() *Posts { return &Posts{db: db} }

// Posted implements store.Posts.
func (p *Posts) Posted(key string) (bool, error) {
	ctx, cancel := p.db.call()
	defer cancel()
	var posted bool
	if err := p.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM posts WHERE key = $1)`, key).Scan(&posted); err != nil {
		return false, fmt.Errorf("read the post record: %w", err)
	}
	return posted, nil
}

// Record implements store.Posts.
func (p *Posts) Record(key, messageID string) error {
	ctx, cancel := p.db.call()
	defer cancel()
	if _, err := p.db.pool.Exec(ctx, `INSERT INTO posts (key, message_id) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, messageID); err != nil {
		return fmt.Errorf("record a post: %w", err)
	}
	if p.records.Add(1)%1000 == 0 {
		if _, err := p.db.pool.Exec(ctx, `DELETE FROM posts WHERE posted_at < now() - make_interval(secs => $1)`, store.KeepPosts.Seconds()); err != nil {
			return fmt.Errorf("forget old posts: %w", err)
		}
	}
	return nil
}
