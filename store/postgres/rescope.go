package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

var _ store.ArchiveRescoper = (*Archive)(nil)

// Rescope implements store.ArchiveRescoper in one transaction: the
// entries outside to are read with their rows locked, pick chooses, and
// the chosen ones' scope changes.
func (a *Archive) Rescope(pick func(store.Entry) bool, to audience.Scope) ([]store.Entry, error) {
	if err := store.CheckScope(to); err != nil {
		return nil, err
	}
	var moved []store.Entry
	err := a.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		moved = nil
		rows, err := tx.Query(ctx, `SELECT `+entryColumns+` FROM archive_entries
			WHERE scope <> $1 ORDER BY cursor FOR UPDATE`, string(to))
		if err != nil {
			return err
		}
		all, err := pgx.CollectRows(rows, scanEntry)
		if err != nil {
			return err
		}
		var cursors []int
		for _, e := range all {
			if pick(e) {
				moved = append(moved, e)
				cursors = append(cursors, e.Cursor)
			}
		}
		if len(cursors) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE archive_entries SET scope = $1 WHERE cursor = ANY($2)`, string(to), cursors)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("move history entries to scope %q: %w", to, err)
	}
	if len(moved) > 0 {
		a.db.log.Info("moved history entries to another scope", "entries", len(moved), "scope", string(to))
	}
	return moved, nil
}
