package recall

import (
	"context"
	"database/sql"
	"fmt"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// filesWriter is the embedded engine's store.RecallWriter: one SQLite
// transaction at a time, begun at the first write after a Commit.
type filesWriter struct {
	db  *sql.DB
	ctx context.Context

	tx     *sql.Tx
	insDoc *sql.Stmt
	scopes map[audience.Scope]*scopeRow
	// slots is the next free slot of a scope's minute (by the rowid of
	// its slot 0), for the transaction under way.
	slots map[int64]int64
}

type scopeRow struct {
	id, docs int64
	dirty    bool
	// insTerms inserts into the scope's full-text table, in the
	// transaction under way.
	insTerms *sql.Stmt
}

var _ store.RecallWriter = (*filesWriter)(nil)

// q is what reads go through: the transaction under way, so that they see
// what it wrote, or the database.
func (w *filesWriter) q() querier {
	if w.tx != nil {
		return w.tx
	}
	return w.db
}

func (w *filesWriter) begin() error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.db.BeginTx(w.ctx, nil)
	if err != nil {
		return classify(fmt.Errorf("begin recall update: %w", err))
	}
	w.tx = tx
	if w.insDoc, err = tx.PrepareContext(w.ctx, `INSERT INTO docs(id, kind, at, conv, pos, who, text) VALUES (?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return classify(err)
	}
	return nil
}

// exec runs a statement in the transaction.
func (w *filesWriter) exec(query string, args ...any) error {
	if err := w.begin(); err != nil {
		return err
	}
	_, err := w.tx.ExecContext(w.ctx, query, args...)
	return classify(err)
}

// Marks implements store.RecallWriter.
func (w *filesWriter) Marks(prefix string) (map[string]string, error) {
	rows, err := w.q().QueryContext(w.ctx, `SELECT name, value FROM marks WHERE name >= ? AND name < ?`, prefix, prefix+string(utf8.MaxRune))
	if err != nil {
		return nil, classify(fmt.Errorf("read recall marks: %w", err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, classify(err)
		}
		out[name] = value
	}
	return out, classify(rows.Err())
}

// SetMark implements store.RecallWriter.
func (w *filesWriter) SetMark(name, value string) error {
	if value == "" {
		return w.exec(`DELETE FROM marks WHERE name = ?`, name)
	}
	return w.exec(`INSERT INTO marks(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`, name, value)
}

// scope returns s's row, adding it on first use.
func (w *filesWriter) scope(s audience.Scope) (*scopeRow, error) {
	if r, ok := w.scopes[s]; ok {
		return r, nil
	}
	r := &scopeRow{}
	id, docs, ok, err := scopeRowOf(w.ctx, w.tx, s)
	if err == nil && !ok {
		err = w.tx.QueryRowContext(w.ctx, `INSERT INTO scopes(name) VALUES (?) RETURNING id`, string(s)).Scan(&id)
	}
	if err != nil {
		return nil, classify(fmt.Errorf("recall scope %q: %w", s, err))
	}
	r.id, r.docs = id, docs
	if r.id <= 0 || r.id >= 1<<(63-scopeShift) {
		return nil, fmt.Errorf("%w: scope id %d out of range", errCorrupt, r.id)
	}
	if _, err := w.tx.ExecContext(w.ctx, createTerms(r.id)); err != nil {
		return nil, classify(fmt.Errorf("recall scope %q: %w", s, err))
	}
	w.scopes[s] = r
	return r, nil
}

// Add implements store.RecallWriter.
func (w *filesWriter) Add(s audience.Scope, d store.RecallDoc) error {
	if err := w.begin(); err != nil {
		return err
	}
	r, err := w.scope(s)
	if err != nil {
		return err
	}
	id, err := w.slot(r, d.At)
	if err != nil {
		return err
	}
	text := d.Text
	if len(text) > store.RecallMaxText {
		text = cutBytes(text, store.RecallMaxText)
	}
	if _, err := w.insDoc.ExecContext(w.ctx, id, int(d.Kind), d.At, d.Conversation, d.Pos, d.Who, text); err != nil {
		return classify(fmt.Errorf("index: %w", err))
	}
	if r.insTerms == nil {
		if r.insTerms, err = w.tx.PrepareContext(w.ctx, `INSERT INTO `+termsTable(r.id)+`(rowid, text) VALUES (?, ?)`); err != nil {
			return classify(err)
		}
	}
	if _, err := r.insTerms.ExecContext(w.ctx, id, indexedText(d.Who, text)); err != nil {
		return classify(fmt.Errorf("index: %w", err))
	}
	r.docs++
	r.dirty = true
	return nil
}

// indexedText is what a document's words are found in: the speaker's name
// too ("what did Ana say about …").
func indexedText(who, text string) string {
	if who == "" {
		return text
	}
	return who + ": " + text
}

// slot returns the rowid of a new document of scope r said at unix time
// at (see rowTime).
func (w *filesWriter) slot(r *scopeRow, at int64) (int64, error) {
	if w.slots == nil {
		w.slots = map[int64]int64{}
	}
	for minute := store.RecallMinute(at); minute <= store.RecallMaxMinute; minute++ {
		base := r.id<<scopeShift | minute<<store.RecallSlotBits
		next, ok := w.slots[base]
		if !ok {
			var last sql.NullInt64
			err := w.tx.QueryRowContext(w.ctx, `SELECT max(id) FROM docs WHERE id >= ? AND id < ?`, base, base+1<<store.RecallSlotBits).Scan(&last)
			if err != nil {
				return 0, classify(err)
			}
			if last.Valid {
				next = last.Int64 - base + 1
			}
		}
		if next < 1<<store.RecallSlotBits {
			w.slots[base] = next + 1
			return base + next, nil
		}
		w.slots[base] = next
	}
	return 0, fmt.Errorf("%w: no rowid left for a document of scope id %d", errCorrupt, r.id)
}

// Drop implements store.RecallWriter.
func (w *filesWriter) Drop(s audience.Scope, kind store.RecallKind) error {
	if err := w.begin(); err != nil {
		return err
	}
	r, err := w.scope(s)
	if err != nil {
		return err
	}
	lo, hi := r.id<<scopeShift, (r.id+1)<<scopeShift
	// The kind is written into the statement, so that SQLite uses the
	// partial index of cold lines.
	rows, err := w.tx.QueryContext(w.ctx, fmt.Sprintf(`SELECT id FROM docs WHERE kind = %d AND id >= ? AND id < ?`, int(kind)), lo, hi)
	if err != nil {
		return classify(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return classify(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	for _, id := range ids {
		if err := w.exec(`DELETE FROM `+termsTable(r.id)+` WHERE rowid = ?`, id); err != nil {
			return err
		}
		if err := w.exec(`DELETE FROM docs WHERE id = ?`, id); err != nil {
			return err
		}
		r.docs--
		r.dirty = true
	}
	return nil
}

// Commit implements store.RecallWriter: the transaction under way, with
// each scope's count of documents.
func (w *filesWriter) Commit() error {
	if w.tx == nil {
		return nil
	}
	for _, r := range w.scopes {
		if r.dirty {
			if _, err := w.tx.ExecContext(w.ctx, `UPDATE scopes SET docs = ? WHERE id = ?`, r.docs, r.id); err != nil {
				return classify(err)
			}
			r.dirty = false
		}
	}
	err := w.tx.Commit()
	w.tx = nil
	clear(w.slots)
	for _, r := range w.scopes {
		r.insTerms = nil // closed with the transaction
	}
	if err != nil {
		// What the rows said is gone with the transaction: read them again.
		clear(w.scopes)
		return classify(fmt.Errorf("commit recall update: %w", err))
	}
	return nil
}

func (w *filesWriter) rollback() {
	if w.tx != nil {
		_ = w.tx.Rollback()
		w.tx = nil
		clear(w.scopes)
	}
}
