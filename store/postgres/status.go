package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dreamgate/dreamgate/store"
)

// Processes lists the live processes of the database (the ones whose
// advisory lock is held), the oldest first, with the claims and leases
// each holds.
func (db *DB) Processes() ([]store.ProcessStatus, error) {
	var out []store.ProcessStatus
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var key1 int32
		if err := tx.QueryRow(ctx, `SELECT hashtext('dreamgate process ' || current_schema()) & 2147483647`).Scan(&key1); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, host, pid, version, started_at FROM processes
			WHERE id IN (`+liveProcesses+`) ORDER BY id`, key1)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ProcessStatus, error) {
			var p store.ProcessStatus
			return p, r.Scan(&p.ID, &p.Host, &p.PID, &p.Version, &p.Started)
		})
		if err != nil {
			return err
		}
		byID := map[int64]*store.ProcessStatus{}
		for i := range out {
			byID[out[i].ID] = &out[i]
		}
		return heldBy(ctx, tx, byID)
	})
	if err != nil {
		return nil, fmt.Errorf("list the database's processes: %w", err)
	}
	return out, nil
}

// heldBy adds to each process the claims and leases its rows name.
func heldBy(ctx context.Context, tx pgx.Tx, byID map[int64]*store.ProcessStatus) error {
	rows, err := tx.Query(ctx, `SELECT 'claim', conversation, process, since, 0 FROM claims
		UNION ALL SELECT 'lease', name, process, since, epoch FROM leases WHERE process IS NOT NULL
		ORDER BY 4`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var h store.Held
		var proc int64
		if err := rows.Scan(&kind, &h.Name, &proc, &h.Since, &h.Epoch); err != nil {
			return err
		}
		p := byID[proc]
		switch {
		case p == nil: // a dead process's
		case kind == "claim":
			p.Claims = append(p.Claims, h)
		default:
			p.Leases = append(p.Leases, h)
		}
	}
	return rows.Err()
}
