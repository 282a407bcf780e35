package postgres

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// recallWriter is the PostgreSQL engine's store.RecallWriter: one
// transaction at a time on the writer's connection (the one holding its
// lock), begun at the first write after a Commit. Documents and marks are
// gathered and written a batch at a time, in one statement each, so an
// update costs a round trip per thousand documents, not per document.
type recallWriter struct {
	ctx  context.Context
	conn *pgxpool.Conn
	tx   pgx.Tx

	docs []pendingDoc
	// marks are the marks set since the last write of them ("" removes);
	// counts each scope's documents added or dropped since the last
	// Commit.
	marks  map[string]string
	counts map[string]int64
	// added counts the documents committed.
	added int
}

type pendingDoc struct {
	scope string
	doc   store.RecallDoc
}

var _ store.RecallWriter = (*recallWriter)(nil)

// batch is how many documents one statement inserts.
const batch = 1000

func (w *recallWriter) begin() error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.conn.Begin(w.ctx)
	if err != nil {
		return fmt.Errorf("begin recall update: %w", err)
	}
	w.tx = tx
	return nil
}

// Add implements store.RecallWriter.
func (w *recallWriter) Add(s audience.Scope, d store.RecallDoc) error {
	if len(d.Text) > store.RecallMaxText {
		d.Text = cutBytes(d.Text, store.RecallMaxText)
	}
	w.docs = append(w.docs, pendingDoc{scope: string(s), doc: d})
	if len(w.docs) >= batch {
		return w.writeDocs()
	}
	return nil
}

// insertDocs adds a batch of documents. Each document's ord is its
// minute's (store.RecallMinute) followed by the next slot of that minute
// in its scope, the embedded engine's row order; its words are indexed
// with the recall_words configuration (migration 00008).
const insertDocs = `WITH n AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::smallint[], $4::bigint[], $5::text[], $6::integer[], $7::text[], $8::text[], $9::text[])
		WITH ORDINALITY AS n(scope, minute, kind, at, conversation, pos, who, body, words, i)
), base AS (
	SELECT k.scope, k.minute, coalesce((SELECT max(d.ord) + 1 FROM recall_docs d
		WHERE d.scope = k.scope AND d.ord >= k.minute << 15 AND d.ord < (k.minute + 1) << 15), k.minute << 15) AS first
	FROM (SELECT DISTINCT scope, minute FROM n) k
)
INSERT INTO recall_docs (scope, ord, kind, at, conversation, pos, who, body, words)
SELECT n.scope, b.first + row_number() OVER (PARTITION BY n.scope, n.minute ORDER BY n.i) - 1,
	n.kind, n.at, n.conversation, n.pos, n.who, n.body, to_tsvector('recall_words', n.words)
FROM n JOIN base b ON b.scope = n.scope AND b.minute = n.minute`

// writeDocs inserts the documents gathered.
func (w *recallWriter) writeDocs() error {
	if len(w.docs) == 0 {
		return nil
	}
	if err := w.begin(); err != nil {
		return err
	}
	n := len(w.docs)
	var (
		scopes, convs, whos, bodies, words = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		minutes, ats                       = make([]int64, n), make([]int64, n)
		kinds                              = make([]int16, n)
		poss                               = make([]int32, n)
	)
	for i, p := range w.docs {
		d := p.doc
		scopes[i], minutes[i], kinds[i], ats[i] = p.scope, store.RecallMinute(d.At), int16(d.Kind), d.At
		convs[i], poss[i], whos[i], bodies[i] = d.Conversation, int32(d.Pos), d.Who, d.Text
		words[i] = recallWords(d.Who + " " + d.Text)
		w.counts[p.scope]++
	}
	if _, err := w.tx.Exec(w.ctx, insertDocs, scopes, minutes, kinds, ats, convs, poss, whos, bodies, words); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	w.docs = w.docs[:0]
	return nil
}

// Drop implements store.RecallWriter.
func (w *recallWriter) Drop(s audience.Scope, kind store.RecallKind) error {
	if err := w.writeDocs(); err != nil {
		return err
	}
	if err := w.begin(); err != nil {
		return err
	}
	tag, err := w.tx.Exec(w.ctx, `DELETE FROM recall_docs WHERE scope = $1 AND kind = $2`, string(s), int16(kind))
	if err != nil {
		return fmt.Errorf("drop recall documents: %w", err)
	}
	w.counts[string(s)] -= tag.RowsAffected()
	return nil
}

// Marks implements store.RecallWriter: the rows, and over them the marks
// set since they were last written.
func (w *recallWriter) Marks(prefix string) (map[string]string, error) {
	var q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	} = w.conn
	if w.tx != nil {
		q = w.tx
	}
	rows, err := q.Query(w.ctx, `SELECT name, value FROM recall_marks WHERE name >= $1 AND name < $2`, prefix, prefix+string(utf8.MaxRune))
	if err != nil {
		return nil, fmt.Errorf("read recall marks: %w", err)
	}
	out := map[string]string{}
	var name, value string
	_, err = pgx.ForEachRow(rows, []any{&name, &value}, func() error {
		out[name] = value
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read recall marks: %w", err)
	}
	for k, v := range w.marks {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// SetMark implements store.RecallWriter.
func (w *recallWriter) SetMark(name, value string) error {
	w.marks[name] = value
	return nil
}

// writeMarks writes the marks set since they were last written.
func (w *recallWriter) writeMarks() error {
	if len(w.marks) == 0 {
		return nil
	}
	if err := w.begin(); err != nil {
		return err
	}
	var names, values, gone []string
	for k, v := range w.marks {
		if v == "" {
			gone = append(gone, k)
		} else {
			names, values = append(names, k), append(values, v)
		}
	}
	if len(names) > 0 {
		if _, err := w.tx.Exec(w.ctx, `INSERT INTO recall_marks (name, value) SELECT * FROM unnest($1::text[], $2::text[])
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, names, values); err != nil {
			return fmt.Errorf("write recall marks: %w", err)
		}
	}
	if len(gone) > 0 {
		if _, err := w.tx.Exec(w.ctx, `DELETE FROM recall_marks WHERE name = ANY($1)`, gone); err != nil {
			return fmt.Errorf("write recall marks: %w", err)
		}
	}
	clear(w.marks)
	return nil
}

// Commit implements store.RecallWriter.
func (w *recallWriter) Commit() error {
	if err := w.writeDocs(); err != nil {
		return err
	}
	if err := w.writeMarks(); err != nil {
		return err
	}
	if w.tx == nil {
		return nil
	}
	var scopes []string
	var counts []int64
	for s, n := range w.counts {
		if n != 0 {
			scopes, counts = append(scopes, s), append(counts, n)
		}
	}
	if len(scopes) > 0 {
		if _, err := w.tx.Exec(w.ctx, `INSERT INTO recall_scopes (scope, docs) SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (scope) DO UPDATE SET docs = recall_scopes.docs + excluded.docs`, scopes, counts); err != nil {
			return fmt.Errorf("count recall documents: %w", err)
		}
	}
	err := w.tx.Commit(w.ctx)
	w.tx = nil
	if err != nil {
		clear(w.counts)
		return fmt.Errorf("commit recall update: %w", err)
	}
	for _, n := range w.counts {
		w.added += int(max(n, 0))
	}
	clear(w.counts)
	return nil
}

// rollback drops what was written since the last Commit.
func (w *recallWriter) rollback() {
	w.docs, w.marks, w.counts = nil, map[string]string{}, map[string]int64{}
	if w.tx != nil {
		_ = w.tx.Rollback(context.Background())
		w.tx = nil
	}
}

// cutBytes cuts s to at most n bytes, never inside a character.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
