package postgres

import (
	"context"
	"fmt"
	"sync"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
)

// Archive is the archive in PostgreSQL (store.History): the table
// archive_entries, and archive_counters for the last cursor handed out and
// Dream's. An append takes the next cursor from the 'last' counter's row
// in its own transaction, so appends from any number of processes are
// serialised by that row's lock: cursors rise in commit order, and a
// reader that sees an entry sees every entry below it.
type Archive struct {
	db *DB

	warnOnce sync.Once
}

var _ store.History = (*Archive)(nil)

// Archive returns the database's archive.
func (db *DB) Archive() *Archive { return &Archive{db: db} }

const entryColumns = "cursor, stamp, content, session_key, session_id, range_from, range_to, scope"

// AppendIn implements store.Archive.
func (a *Archive) AppendIn(scope audience.Scope, content, sessionKey string) (store.Entry, error) {
	return a.append(scope, content, sessionKey, store.Source{})
}

// AppendFrom implements store.Archive.
func (a *Archive) AppendFrom(scope audience.Scope, content, sessionKey string, src store.Source) (store.Entry, error) {
	if !src.Valid() {
		return store.Entry{}, fmt.Errorf("append history entry from %+v: source must name a session id and a non-empty message range", src)
	}
	return a.append(scope, content, sessionKey, src)
}

func (a *Archive) append(scope audience.Scope, content, sessionKey string, src store.Source) (store.Entry, error) {
	if err := store.CheckScope(scope); err != nil {
		return store.Entry{}, err
	}
	chars := len([]rune(content))
	content, cut := store.EntryContent(content)
	if cut {
		a.warnOnce.Do(func() {
			a.db.log.Warn("history entry over the size cap; truncating (further ones not logged)", "chars", chars, "cap", store.MaxEntryChars)
		})
	}
	e := store.Entry{
		Timestamp:  a.db.now().Format(store.TimestampLayout),
		Content:    content,
		SessionKey: sessionKey,
		Scope:      scope,
	}
	e.SetSource(src)
	err := a.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var next int
		if err := tx.QueryRow(ctx, `UPDATE archive_counters SET value = value + 1 WHERE name = 'last' RETURNING value`).Scan(&next); err != nil {
			return err
		}
		e.Cursor = next
		_, err := tx.Exec(ctx, `INSERT INTO archive_entries (`+entryColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			e.Cursor, e.Timestamp, e.Content, e.SessionKey, e.SessionID, e.Range[0], e.Range[1], string(e.Scope))
		return err
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("append history entry: %w", err)
	}
	return e, nil
}

// ArchivedAt implements store.Archive.
func (a *Archive) ArchivedAt(sessionKey, sessionID string, from int) (store.Entry, bool, error) {
	if sessionID == "" {
		return store.Entry{}, false, nil
	}
	es, err := a.query(`SELECT `+entryColumns+` FROM archive_entries
		WHERE session_key = $1 AND session_id = $2 ORDER BY cursor DESC LIMIT 1`, sessionKey, sessionID)
	if err != nil || len(es) == 0 || es[0].Range[0] != from {
		return store.Entry{}, false, err
	}
	return es[0], true, nil
}

// LastCursor implements store.Archive.
func (a *Archive) LastCursor() (int, error) {
	ctx, cancel := a.db.call()
	defer cancel()
	var n int
	err := a.db.pool.QueryRow(ctx, `SELECT greatest(
		(SELECT value FROM archive_counters WHERE name = 'last'),
		(SELECT coalesce(max(cursor), 0) FROM archive_entries))`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read the last history cursor: %w", err)
	}
	return n, nil
}

// Compact implements store.Archive: the oldest entries at or below the
// Dream cursor go while more than maxEntries remain. It holds the 'last'
// counter's row while it counts and deletes, so no append lands between.
func (a *Archive) Compact(maxEntries int) (int, error) {
	if maxEntries <= 0 {
		return 0, nil
	}
	var dropped int
	err := a.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var total, read int
		if _, err := tx.Exec(ctx, `SELECT value FROM archive_counters WHERE name = 'last' FOR UPDATE`); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE cursor <= (SELECT value FROM archive_counters WHERE name = 'dream'))
			FROM archive_entries`).Scan(&total, &read)
		if err != nil || total <= maxEntries {
			return err
		}
		n := min(total-maxEntries, read)
		if n == 0 {
			a.db.log.Warn("history over its entry limit, but every entry is unread by Dream; keeping all", "entries", total, "limit", maxEntries)
			return nil
		}
		tag, err := tx.Exec(ctx, `DELETE FROM archive_entries WHERE cursor IN
			(SELECT cursor FROM archive_entries ORDER BY cursor LIMIT $1)`, n)
		dropped = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("compact history: %w", err)
	}
	if dropped > 0 {
		a.db.log.Info("compacted history", "dropped", dropped)
	}
	return dropped, nil
}

// Since implements store.ArchiveReader.
func (a *Archive) Since(cursor, limit int) ([]store.Entry, error) {
	return a.query(`SELECT `+entryColumns+` FROM archive_entries
		WHERE cursor > $1 ORDER BY cursor LIMIT $2`, cursor, limitArg(limit))
}

// SinceIn implements store.ArchiveReader.
func (a *Archive) SinceIn(scope audience.Scope, cursor, limit int) ([]store.Entry, error) {
	return a.query(`SELECT `+entryColumns+` FROM archive_entries
		WHERE scope = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`, string(scope), cursor, limitArg(limit))
}

// UnreadLast implements store.ArchiveReader.
func (a *Archive) UnreadLast(sessionKey string, n int) ([]store.Entry, error) {
	return a.query(`SELECT * FROM (SELECT `+entryColumns+` FROM archive_entries
		WHERE session_key = $1 AND cursor > (SELECT value FROM archive_counters WHERE name = 'dream')
		ORDER BY cursor DESC LIMIT $2) last ORDER BY cursor`, sessionKey, limitArg(n))
}

// Entries implements store.ArchiveReader.
func (a *Archive) Entries(cursors ...int) ([]store.Entry, error) {
	if len(cursors) == 0 {
		return nil, nil
	}
	return a.query(`SELECT `+entryColumns+` FROM archive_entries
		WHERE cursor = ANY($1) ORDER BY cursor`, cursors)
}

// Backlogs implements store.ArchiveReader, in one statement: the scopes'
// bars and the highest cursor are read from one snapshot.
func (a *Archive) Backlogs(after int, cursors map[audience.Scope]int) ([]store.Backlog, int, error) {
	names := make([]string, 0, len(cursors))
	bars := make([]int, 0, len(cursors))
	for s, c := range cursors {
		names, bars = append(names, string(s)), append(bars, max(c, after))
	}
	ctx, cancel := a.db.call()
	defer cancel()
	rows, err := a.db.pool.Query(ctx, `WITH bars AS (SELECT * FROM unnest($2::text[], $3::bigint[]) AS b(scope, bar)),
		backlog AS (SELECT e.scope, min(e.cursor) AS first, count(*) AS n FROM archive_entries e
			LEFT JOIN bars b ON b.scope = e.scope
			WHERE e.cursor > coalesce(b.bar, $1) GROUP BY e.scope)
		SELECT scope, first, n, (SELECT coalesce(max(cursor), 0) FROM archive_entries) FROM backlog
		UNION ALL SELECT NULL, NULL, NULL, (SELECT coalesce(max(cursor), 0) FROM archive_entries)
		ORDER BY 2 NULLS LAST`, after, names, bars)
	if err != nil {
		return nil, 0, fmt.Errorf("read history backlogs: %w", err)
	}
	defer rows.Close()
	var out []store.Backlog
	last := 0
	for rows.Next() {
		var scope *string
		var first, n *int
		if err := rows.Scan(&scope, &first, &n, &last); err != nil {
			return nil, 0, fmt.Errorf("read history backlogs: %w", err)
		}
		if scope != nil {
			out = append(out, store.Backlog{Scope: audience.Scope(*scope), First: *first, Count: *n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read history backlogs: %w", err)
	}
	return out, last, nil
}

// Len implements store.ArchiveReader.
func (a *Archive) Len() (int, error) {
	ctx, cancel := a.db.call()
	defer cancel()
	var n int
	if err := a.db.pool.QueryRow(ctx, `SELECT count(*) FROM archive_entries`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count history entries: %w", err)
	}
	return n, nil
}

// DreamCursor implements store.DreamCursor.
func (a *Archive) DreamCursor() (int, error) {
	ctx, cancel := a.db.call()
	defer cancel()
	var n int
	if err := a.db.pool.QueryRow(ctx, `SELECT value FROM archive_counters WHERE name = 'dream'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the dream cursor: %w", err)
	}
	return n, nil
}

// SetDreamCursor implements store.DreamCursor.
func (a *Archive) SetDreamCursor(n int) error {
	ctx, cancel := a.db.call()
	defer cancel()
	if _, err := a.db.pool.Exec(ctx, `UPDATE archive_counters SET value = $1 WHERE name = 'dream'`, n); err != nil {
		return fmt.Errorf("write the dream cursor: %w", err)
	}
	return nil
}

// query reads entries.
func (a *Archive) query(sql string, args ...any) ([]store.Entry, error) {
	ctx, cancel := a.db.call()
	defer cancel()
	rows, err := a.db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return out, nil
}

func scanEntry(row pgx.CollectableRow) (store.Entry, error) {
	var e store.Entry
	var scope string
	err := row.Scan(&e.Cursor, &e.Timestamp, &e.Content, &e.SessionKey, &e.SessionID, &e.Range[0], &e.Range[1], &scope)
	e.Scope = audience.Scope(scope)
	return e, err
}

// limitArg is a LIMIT's argument: NULL (no limit) for n <= 0.
func limitArg(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

var _ store.ArchiveImporter = (*Archive)(nil)

// Import implements store.ArchiveImporter: the entries above the last
// cursor go in with COPY, in one transaction that also moves the counter.
func (a *Archive) Import(entries []store.Entry) (int, error) {
	added := 0
	err := a.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var last int
		if err := tx.QueryRow(ctx, `SELECT greatest(value, (SELECT coalesce(max(cursor), 0) FROM archive_entries))
			FROM archive_counters WHERE name = 'last' FOR UPDATE`).Scan(&last); err != nil {
			return err
		}
		var rows [][]any
		top := last
		for _, e := range entries {
			if e.Cursor <= top {
				continue
			}
			if err := store.CheckScope(e.Scope); err != nil {
				return fmt.Errorf("entry %d: %w", e.Cursor, err)
			}
			top = e.Cursor
			rows = append(rows, []any{e.Cursor, e.Timestamp, e.Content, e.SessionKey, e.SessionID, e.Range[0], e.Range[1], string(e.Scope)})
		}
		if len(rows) == 0 {
			return nil
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"archive_entries"},
			[]string{"cursor", "stamp", "content", "session_key", "session_id", "range_from", "range_to", "scope"},
			pgx.CopyFromRows(rows))
		if err != nil {
			return err
		}
		added = int(n)
		_, err = tx.Exec(ctx, `UPDATE archive_counters SET value = greatest(value, $1) WHERE name = 'last'`, top)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	return added, nil
}

// RaiseLastCursor implements store.ArchiveImporter.
func (a *Archive) RaiseLastCursor(n int) error {
	ctx, cancel := a.db.call()
	defer cancel()
	if _, err := a.db.pool.Exec(ctx, `UPDATE archive_counters SET value = greatest(value, $1) WHERE name = 'last'`, n); err != nil {
		return fmt.Errorf("raise the last history cursor: %w", err)
	}
	return nil
}
