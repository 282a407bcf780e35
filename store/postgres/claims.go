package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dreamgate/dreamgate/store"
)

// Claims: a conversation is claimed with the advisory lock of its key,
// taken without waiting on the process's connection, and a row in claims
// saying who holds it since when. A row left by a process whose lock is
// gone says it died holding the conversation: the next claim is a
// takeover.

// claimLock is a conversation's advisory lock ($1: its key).
const claimLock = `hashtextextended('dreamgate claim ' || current_schema() || ' ' || $1, 0)`

// Claim implements store.Claims.
func (p *Process) Claim(key string) (ok, takenOver bool, err error) {
	name := "claim " + key
	err = p.exec(func(ctx context.Context, conn *pgx.Conn) error {
		if _, held := p.held[name]; held {
			ok = true
			return nil
		}
		var prev *int64
		err := conn.QueryRow(ctx, `WITH l AS (SELECT pg_try_advisory_lock(`+claimLock+`) AS got),
			prev AS (SELECT process FROM claims WHERE conversation = $1)
			INSERT INTO claims (conversation, process, since) SELECT $1, $2, now() FROM l WHERE got
			ON CONFLICT (conversation) DO UPDATE SET process = EXCLUDED.process, since = EXCLUDED.since
			RETURNING (SELECT process FROM prev)`, key, p.id).Scan(&prev)
		if errNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		ok, takenOver = true, prev != nil && *prev != p.id
		p.held[name] = time.Now()
		return nil
	})
	if err != nil {
		return false, false, fmt.Errorf("claim conversation %s: %w", key, err)
	}
	return ok, takenOver, nil
}

// Release implements store.Claims.
func (p *Process) Release(key string) error {
	name := "claim " + key
	err := p.exec(func(ctx context.Context, conn *pgx.Conn) error {
		if _, held := p.held[name]; !held {
			return nil
		}
		delete(p.held, name)
		// Whoever waits for it (a command in another process) is told.
		_, err := conn.Exec(ctx, `WITH d AS (DELETE FROM claims WHERE conversation = $1 AND process = $2)
			SELECT pg_advisory_unlock(`+claimLock+`), pg_notify('`+notifyChannel+`', current_schema() || E'\t' || $1)`, key, p.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("release conversation %s: %w", key, err)
	}
	return nil
}

// HeldElsewhere implements store.Claims: the conversation's row names a
// live process other than this one.
func (p *Process) HeldElsewhere(key string) (bool, error) {
	ctx, cancel := p.db.call()
	defer cancel()
	var held bool
	err := p.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM claims WHERE conversation = $2 AND process <> $3
		AND process IN (`+liveProcesses+`))`, p.key1, key, p.id).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("look for conversation %s's holder: %w", key, err)
	}
	return held, nil
}

// Waiting implements store.Claims: in the order the messages were sent
// (accepted_at is the platform's time of the message), then accepted.
func (p *Process) Waiting(key string) ([]store.InboxMessage, error) {
	ctx, cancel := p.db.call()
	defer cancel()
	rows, err := p.db.pool.Query(ctx, `SELECT channel, message_id, conversation, origin, body, accepted_at
		FROM inbox_messages WHERE conversation = $1 AND answered_at IS NULL ORDER BY accepted_at, seq`, key)
	if err != nil {
		return nil, fmt.Errorf("read conversation %s's waiting messages: %w", key, err)
	}
	out, err := pgx.CollectRows(rows, scanInboxMessage)
	if err != nil {
		return nil, fmt.Errorf("read conversation %s's waiting messages: %w", key, err)
	}
	return out, nil
}

// Claimable implements store.Claims: a conversation a dead process held
// (its row in claims) at once, one nobody claimed yet once its oldest
// waiting message is older than unclaimed by the database's clock.
func (p *Process) Claimable(platforms []string, unclaimed time.Duration, n int) ([]string, error) {
	if n <= 0 || len(platforms) == 0 {
		return nil, nil
	}
	ctx, cancel := p.db.call()
	defer cancel()
	rows, err := p.db.pool.Query(ctx, `SELECT m.conversation FROM inbox_messages m
		LEFT JOIN claims c ON c.conversation = m.conversation
		WHERE m.answered_at IS NULL AND m.channel = ANY($2)
		AND (c.process IS NULL OR c.process NOT IN (`+liveProcesses+`))
		GROUP BY m.conversation, c.process
		HAVING c.process IS NOT NULL OR min(m.received_at) <= now() - make_interval(secs => $4)
		ORDER BY min(m.seq) LIMIT $3`, p.key1, platforms, n, unclaimed.Seconds())
	if err != nil {
		return nil, fmt.Errorf("look for conversations to answer: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look for conversations to answer: %w", err)
	}
	return keys, nil
}

// leaseLock is a lease's advisory lock ($1: its name).
const leaseLock = `hashtextextended('dreamgate lease ' || current_schema() || ' ' || $1, 0)`

// Lease implements store.Leases.
func (p *Process) Lease(name string) (epoch int64, ok, takenOver bool, err error) {
	lock := "lease " + name
	err = p.exec(func(ctx context.Context, conn *pgx.Conn) error {
		if _, held := p.held[lock]; held {
			ok = true
			return conn.QueryRow(ctx, `SELECT epoch FROM leases WHERE name = $1`, name).Scan(&epoch)
		}
		var prev *int64
		err := conn.QueryRow(ctx, `WITH l AS (SELECT pg_try_advisory_lock(`+leaseLock+`) AS got),
			prev AS (SELECT process FROM leases WHERE name = $1)
			INSERT INTO leases (name, process, epoch, since) SELECT $1, $2, 1, now() FROM l WHERE got
			ON CONFLICT (name) DO UPDATE SET process = EXCLUDED.process, epoch = leases.epoch + 1, since = EXCLUDED.since
			RETURNING epoch, (SELECT process FROM prev)`, name, p.id).Scan(&epoch, &prev)
		if errNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		ok, takenOver = true, prev != nil && *prev != p.id
		p.held[lock] = time.Now()
		return nil
	})
	if err != nil {
		return 0, false, false, fmt.Errorf("lease %s: %w", name, err)
	}
	return epoch, ok, takenOver, nil
}

// Unlease implements store.Leases.
func (p *Process) Unlease(name string) error {
	lock := "lease " + name
	err := p.exec(func(ctx context.Context, conn *pgx.Conn) error {
		if _, held := p.held[lock]; !held {
			return nil
		}
		delete(p.held, lock)
		_, err := conn.Exec(ctx, `WITH u AS (UPDATE leases SET process = NULL WHERE name = $1 AND process = $2)
			SELECT pg_advisory_unlock(`+leaseLock+`)`, name, p.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("let lease %s go: %w", name, err)
	}
	return nil
}

// ErrLeaseLost is returned by a write fenced by a lease whose epoch is no
// longer the current one: another process took the lease over.
var ErrLeaseLost = store.ErrLeaseLost

// checkFence fails with ErrLeaseLost unless name's lease is at epoch,
// and keeps it there until tx ends: a successor's taking waits for the
// write, or the write sees its successor.
func checkFence(ctx context.Context, tx querier, name string, epoch int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM leases WHERE name = $1 AND epoch = $2 AND process IS NOT NULL FOR SHARE`, name, epoch).Scan(&one)
	if errNoRows(err) {
		return fmt.Errorf("%w (%s, epoch %d)", ErrLeaseLost, name, epoch)
	}
	return err
}

// InboxDepth counts the messages accepted and not answered, over every
// process.
func (db *DB) InboxDepth() (int, error) {
	ctx, cancel := db.call()
	defer cancel()
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE answered_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the inbox: %w", err)
	}
	return n, nil
}

// fenced runs fn in a transaction that first checks that name's lease is
// at epoch (checkFence), so fn's writes happen under the lease or not at
// all.
func (db *DB) fenced(name string, epoch int64, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := checkFence(ctx, tx, name, epoch); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

// CheckFence fails with store.ErrLeaseLost unless name's lease is at
// epoch (and held).
func (p *Process) CheckFence(name string, epoch int64) error {
	return p.db.fenced(name, epoch, func(context.Context, pgx.Tx) error { return nil })
}
