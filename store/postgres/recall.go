package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/text/unicode/norm"
)

// Recall is the recall index in PostgreSQL (store.RecallIndex): the table
// recall_docs, each document with its scope and a tsvector of its words
// (a GIN index), recall_scopes for each scope's count and recall_marks for
// how far the index read its sources. Every process searches the same
// rows; one at a time writes them, holding an advisory lock on a
// connection of its own for the whole update, so a writer that dies lets
// the next one in with its connection. A search only finds candidates:
// package recall ranks them, the same for both engines.
type Recall struct{ db *DB }

var _ store.RecallIndex = (*Recall)(nil)

// Recall returns the database's recall index.
func (db *DB) Recall() *Recall { return &Recall{db: db} }

// recallLock is the writer's advisory lock.
const recallLock = `hashtext('dreamgate recall ' || current_schema())`

// within derives a call's context from ctx: ended by Close too, and
// bounded by the DB's timeout when bounded is true (an update's long
// transaction is not).
func (db *DB) within(ctx context.Context, bounded bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(db.life, cancel)
	if !bounded {
		return ctx, func() { stop(); cancel() }
	}
	tctx, tcancel := context.WithTimeout(ctx, db.timeout)
	return tctx, func() { tcancel(); stop(); cancel() }
}

// Count implements store.RecallIndex.
func (r *Recall) Count(ctx context.Context, s audience.Scope) (int, error) {
	ctx, cancel := r.db.within(ctx, true)
	defer cancel()
	var n int
	err := r.db.pool.QueryRow(ctx, `SELECT docs FROM recall_scopes WHERE scope = $1`, string(s)).Scan(&n)
	if errNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count recall documents: %w", err)
	}
	return n, nil
}

// matchSQL finds a scope's newest documents holding the words. It runs
// as an unnamed statement (pgx.QueryExecModeCacheDescribe), planned with
// the words it is given: a rare word is read through the GIN index, a
// common one by walking the scope's newest rows, which a plan cached for
// every query would not choose between.
const matchSQL = `SELECT id, ord FROM recall_docs
	WHERE scope = $1 AND words @@ to_tsquery('recall_words', $2) ORDER BY ord DESC LIMIT $3`

// Match implements store.RecallIndex: the candidates, newest first; the
// ranking is recall's. within bounds the statement on the server
// (statement_timeout), which keeps the connection.
func (r *Recall) Match(ctx context.Context, s audience.Scope, terms []string, limit int, within time.Duration) ([]store.RecallHit, error) {
	tsq := tsQuery(terms)
	if tsq == "" || limit <= 0 {
		return nil, nil
	}
	ctx, cancel := r.db.within(ctx, true)
	defer cancel()
	var hits []store.RecallHit
	scan := func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var h store.RecallHit
			if err := rows.Scan(&h.ID, &h.Order); err != nil {
				return err
			}
			hits = append(hits, h)
		}
		return rows.Err()
	}
	if within <= 0 {
		rows, err := r.db.pool.Query(ctx, matchSQL, pgx.QueryExecModeCacheDescribe, string(s), tsq, limit)
		if err == nil {
			err = scan(rows)
		}
		if err != nil {
			return nil, fmt.Errorf("search recall index: %w", err)
		}
		return hits, nil
	}
	// The bound and the search in one round trip: a batch is one
	// transaction, which the settings (set_config's local ones) end
	// with. A batch's statement is a prepared one: planned anew all the
	// same (plan_cache_mode), for the words it is given.
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('statement_timeout', $1, true), set_config('plan_cache_mode', 'force_custom_plan', true)`,
		strconv.FormatInt(max(within.Milliseconds(), 1), 10))
	b.Queue(matchSQL, string(s), tsq, limit)
	br := r.db.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			err = scan(rows)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil {
		return hits, nil // out of time: what was found so far
	}
	if err != nil {
		return nil, fmt.Errorf("search recall index: %w", err)
	}
	return hits, nil
}

// Read implements store.RecallIndex.
func (r *Recall) Read(ctx context.Context, ids []int64) ([]store.RecallRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := r.db.within(ctx, true)
	defer cancel()
	rows, err := r.db.pool.Query(ctx, `SELECT id, scope, kind, at, conversation, pos, who, body
		FROM recall_docs WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read recall documents: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RecallRow, error) {
		var d store.RecallRow
		var scope string
		var kind int16
		err := row.Scan(&d.ID, &scope, &kind, &d.At, &d.Conversation, &d.Pos, &d.Who, &d.Text)
		d.Scope, d.Kind = audience.Scope(scope), store.RecallKind(kind)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read recall documents: %w", err)
	}
	byID := make(map[int64]store.RecallRow, len(got))
	for _, d := range got {
		byID[d.ID] = d
	}
	out := make([]store.RecallRow, 0, len(got))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// Mark implements store.RecallIndex.
func (r *Recall) Mark(ctx context.Context, name string) (string, error) {
	ctx, cancel := r.db.within(ctx, true)
	defer cancel()
	var v string
	err := r.db.pool.QueryRow(ctx, `SELECT value FROM recall_marks WHERE name = $1`, name).Scan(&v)
	if errNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read recall mark: %w", err)
	}
	return v, nil
}

// Update implements store.RecallIndex.
func (r *Recall) Update(ctx context.Context, fn func(store.RecallWriter) error) error {
	ctx, cancel := r.db.within(ctx, false)
	defer cancel()
	conn, err := r.db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("recall update: %w", err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+recallLock+`)`).Scan(&got); err != nil {
		return fmt.Errorf("recall update: take the lock: %w", err)
	}
	if !got {
		return store.ErrRecallBusy
	}
	defer unlockRecall(conn)
	w := &recallWriter{ctx: ctx, conn: conn, marks: map[string]string{}, counts: map[string]int64{}}
	defer w.rollback()
	err = fn(w)
	if err == nil {
		err = w.Commit()
	}
	if w.added > 0 {
		tidy(ctx, conn, w.added)
	}
	return err
}

// analyzeAfter is how many documents an update adds before it has the
// table's statistics read again, which the planner's choice between the
// GIN index and a scope's newest rows depends on (autovacuum would too,
// later).
const analyzeAfter = 10000

// tidy keeps searches quick after an update added documents: the GIN
// index's pending list (rows added since, which every search reads one by
// one) merged into the index, and after many the statistics read again.
// Failing, it changes nothing a search finds.
func tidy(ctx context.Context, conn *pgxpool.Conn, added int) {
	_, _ = conn.Exec(ctx, `SELECT gin_clean_pending_list('recall_docs_words'::regclass)`)
	if added >= analyzeAfter {
		_, _ = conn.Exec(ctx, `ANALYZE recall_docs`)
	}
}

// unlockRecall lets the writer's lock go; a lock an unlock could not let
// go dies with its connection.
func unlockRecall(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+recallLock+`)`); err != nil {
		_ = conn.Conn().Close(ctx)
	}
}

// Reset implements store.RecallIndex.
func (r *Recall) Reset(ctx context.Context) error {
	ctx, cancel := r.db.within(ctx, false)
	defer cancel()
	conn, err := r.db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("reset recall index: %w", err)
	}
	defer conn.Release()
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+recallLock+`)`).Scan(&got); err != nil {
			return fmt.Errorf("reset recall index: take the lock: %w", err)
		}
		if got {
			break
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("reset recall index: %w (%w)", store.ErrRecallBusy, ctx.Err())
		case <-t.C:
		}
	}
	defer unlockRecall(conn)
	if _, err := conn.Exec(ctx, `TRUNCATE recall_docs, recall_scopes, recall_marks`); err != nil {
		return fmt.Errorf("reset recall index: %w", err)
	}
	return nil
}

// tsQuery is terms as a tsquery every one of them must match, their words
// as the documents' are written (recallWords); "" when none is left.
func tsQuery(terms []string) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		// Terms hold letters and digits alone: nothing in them is
		// tsquery syntax.
		if w := recallWords(t); w != "" {
			parts = append(parts, strings.ReplaceAll(w, " ", " & "))
		}
	}
	return strings.Join(parts, " & ")
}

// recallWords is what PostgreSQL indexes of a text: its runs of letters
// and digits, lowercased and without diacritics (as SQLite's FTS5 with
// remove_diacritics does: "café" is found by "cafe"), separated by single
// spaces. Handing the parser words alone keeps it from reading anything
// else (an address, a path, "example.com" as one host) otherwise than the
// embedded engine and recall's query terms split it.
func recallWords(s string) string {
	if !isASCII(s) {
		s = norm.NFD.String(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	sep := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
			// A diacritic of the letter before it: dropped, never a
			// break in the word.
		case r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if sep && b.Len() > 0 {
				b.WriteByte(' ')
			}
			sep = false
			b.WriteRune(unicode.ToLower(r))
		default:
			sep = true
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// RecallSize is the size on disk of the recall index's tables and
// indexes, in bytes (0 when it cannot be read): for benchmarks.
func (db *DB) RecallSize(ctx context.Context) int64 {
	ctx, cancel := db.within(ctx, true)
	defer cancel()
	var n int64
	_ = db.pool.QueryRow(ctx, `SELECT pg_total_relation_size('recall_docs') + pg_total_relation_size('recall_scopes')
		+ pg_total_relation_size('recall_marks')`).Scan(&n)
	return n
}
