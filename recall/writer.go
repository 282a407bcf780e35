package recall

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// doc is one indexed entry, message or cold-memory line.
type doc struct {
	kind int
	at   int64 // unix seconds, 0 unknown
	conv string
	pos  int
	who  string
	text string
}

type scopeRow struct {
	id, docs int64
	dirty    bool
	// insTerms inserts into the scope's full-text table, in the
	// transaction under way.
	insTerms *sql.Stmt
}

// writer adds documents in transactions of batchDocs, each with the
// progress that goes with it: an update killed part way leaves an index
// that is consistent and resumes after its last commit.
type writer struct {
	x   *Index
	db  *sql.DB
	ctx context.Context

	tx     *sql.Tx
	insDoc *sql.Stmt
	scopes map[audience.Scope]*scopeRow
	// slots is the next free slot of a scope's minute (by the rowid of
	// its slot 0), for the transaction under way.
	slots map[int64]int64
	n     int
}

// q is what reads go through: the transaction under way, so that they see
// what it wrote, or the database.
func (w *writer) q() querier {
	if w.tx != nil {
		return w.tx
	}
	return w.db
}

func (w *writer) begin() error {
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
func (w *writer) exec(query string, args ...any) error {
	if err := w.begin(); err != nil {
		return err
	}
	_, err := w.tx.ExecContext(w.ctx, query, args...)
	return classify(err)
}

func (w *writer) meta(k, v string) error {
	if err := w.begin(); err != nil {
		return err
	}
	return setMeta(w.ctx, w.tx, k, v)
}

func (w *writer) conv(ident string, next int, at int64) error {
	return w.exec(`INSERT INTO convs(ident, next, at) VALUES (?, ?, ?)
		ON CONFLICT(ident) DO UPDATE SET next = excluded.next, at = excluded.at`, ident, next, at)
}

// scope returns s's row, adding it on first use.
func (w *writer) scope(s audience.Scope) (*scopeRow, error) {
	if r, ok := w.scopes[s]; ok {
		return r, nil
	}
	r := &scopeRow{}
	err := w.tx.QueryRowContext(w.ctx, `SELECT id, docs FROM scopes WHERE name = ?`, string(s)).Scan(&r.id, &r.docs)
	if errors.Is(err, sql.ErrNoRows) {
		err = w.tx.QueryRowContext(w.ctx, `INSERT INTO scopes(name) VALUES (?) RETURNING id`, string(s)).Scan(&r.id)
	}
	if err != nil {
		return nil, classify(fmt.Errorf("recall scope %q: %w", s, err))
	}
	if r.id <= 0 || r.id >= 1<<(63-scopeShift) {
		return nil, fmt.Errorf("%w: scope id %d out of range", errCorrupt, r.id)
	}
	if _, err := w.tx.ExecContext(w.ctx, createTerms(r.id)); err != nil {
		return nil, classify(fmt.Errorf("recall scope %q: %w", s, err))
	}
	w.scopes[s] = r
	return r, nil
}

// add indexes d in scope s.
func (w *writer) add(s audience.Scope, d doc) error {
	if err := w.begin(); err != nil {
		return err
	}
	r, err := w.scope(s)
	if err != nil {
		return err
	}
	id, err := w.slot(r, d.at)
	if err != nil {
		return err
	}
	text := d.text
	if len(text) > maxDocBytes {
		text = cutBytes(text, maxDocBytes)
	}
	if _, err := w.insDoc.ExecContext(w.ctx, id, d.kind, d.at, d.conv, d.pos, d.who, text); err != nil {
		return classify(fmt.Errorf("index: %w", err))
	}
	// The speaker's name is searchable too: "what did Ana say about …".
	indexed := text
	if d.who != "" {
		indexed = d.who + ": " + text
	}
	if r.insTerms == nil {
		if r.insTerms, err = w.tx.PrepareContext(w.ctx, `INSERT INTO `+termsTable(r.id)+`(rowid, text) VALUES (?, ?)`); err != nil {
			return classify(err)
		}
	}
	if _, err := r.insTerms.ExecContext(w.ctx, id, indexed); err != nil {
		return classify(fmt.Errorf("index: %w", err))
	}
	r.docs++
	r.dirty = true
	w.n++
	return nil
}

func (w *writer) full() bool { return w.n >= batchDocs }

// slot returns the rowid of a new document of scope r said at unix time
// at (see rowMinute).
func (w *writer) slot(r *scopeRow, at int64) (int64, error) {
	if w.slots == nil {
		w.slots = map[int64]int64{}
	}
	for minute := rowMinute(at); minute <= maxMinute; minute++ {
		base := r.id<<scopeShift | minute<<slotBits
		next, ok := w.slots[base]
		if !ok {
			var last sql.NullInt64
			err := w.tx.QueryRowContext(w.ctx, `SELECT max(id) FROM docs WHERE id >= ? AND id < ?`, base, base+1<<slotBits).Scan(&last)
			if err != nil {
				return 0, classify(err)
			}
			if last.Valid {
				next = last.Int64 - base + 1
			}
		}
		if next < 1<<slotBits {
			w.slots[base] = next + 1
			return base + next, nil
		}
		w.slots[base] = next
	}
	return 0, fmt.Errorf("%w: no rowid left for a document of scope id %d", errCorrupt, r.id)
}

// flush commits the transaction under way, with each scope's count of
// documents.
func (w *writer) flush() error {
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
	w.tx, w.n = nil, 0
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

func (w *writer) commit() error { return w.flush() }

func (w *writer) rollback() {
	if w.tx != nil {
		_ = w.tx.Rollback()
		w.tx = nil
	}
}

// dropCold removes scope s's cold-memory lines.
func (w *writer) dropCold(s audience.Scope) error {
	if err := w.begin(); err != nil {
		return err
	}
	r, err := w.scope(s)
	if err != nil {
		return err
	}
	lo, hi := r.id<<scopeShift, (r.id+1)<<scopeShift
	rows, err := w.tx.QueryContext(w.ctx, `SELECT id FROM docs WHERE kind = 3 AND id >= ? AND id < ?`, lo, hi)
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

// lineDate returns the first date (YYYY-MM-DD) a cold-memory line
// carries: the date it was last confirmed, as the memory files write it.
func lineDate(line string) (time.Time, bool) {
	for i := 0; i+10 <= len(line); i++ {
		if line[i+4] != '-' || line[i+7] != '-' || i > 0 && isDigit(line[i-1]) || i+10 < len(line) && isDigit(line[i+10]) {
			continue
		}
		if t, err := time.ParseInLocation("2006-01-02", line[i:i+10], time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// coldText is a cold-memory line as a search shows it: a fact without its
// comment, saying when and why it left hot memory and, when a later line
// replaced it, that it is no longer current and what is (facts: the
// scope's; nil knows none); any other line as written.
func coldText(line string, facts *memory.Facts) string {
	l, ok := memline.Parse(line)
	if !ok || !l.HasComment() {
		return line
	}
	text := "- " + l.Text
	if facts == nil {
		facts = memory.FactsOf(nil)
	}
	if note := memory.SupersededNote(l, facts); note != "" {
		text += " (" + note + ")"
	}
	if why := memory.Why(l); why != "" {
		text += " [" + why + "]"
	}
	return text
}

// addCold indexes each non-blank line of a cold-memory file, dated by the
// date it carries or else by the file's modification time: a fact as
// coldText writes it (facts: the scope's, to say what replaced it).
func (w *writer) addCold(s audience.Scope, text string, mod time.Time, facts *memory.Facts) (int, error) {
	n := 0
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		at := mod.Unix()
		if t, ok := lineDate(line); ok {
			at = t.Unix()
		}
		if err := w.add(s, doc{kind: kindCold, at: at, pos: i + 1, text: coldText(line, facts)}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
