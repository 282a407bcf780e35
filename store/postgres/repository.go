package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/store"
)

// Repository is the memory repository in PostgreSQL (gitstore.DB): the
// git objects, refs and records of migration 00010, for gitstore.OpenDB.
// Writes are one at a time across processes (a transaction advisory lock
// of the schema, taken first), so the refs' versions rise in the order
// writes commit.
type Repository struct{ db *DB }

var _ gitstore.DB = (*Repository)(nil)

// Repository returns the database's memory repository.
func (db *DB) Repository() *Repository { return &Repository{db: db} }

const repoLockKey = `hashtext('dreamgate memory repository ' || current_schema())`

// querier is what a repository call runs on: the pool, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// gitTx is a gitstore.DBTx on the pool (each call its own, under the DB's
// timeout) or on one transaction (ctx set: the transaction's).
type gitTx struct {
	db  *DB
	q   querier
	ctx context.Context
}

var _ gitstore.DBTx = gitTx{}

// RepositoryEmpty reports whether the memory repository has no ref yet (a
// database no process has kept memory in); an error counts as not empty.
func (db *DB) RepositoryEmpty() bool {
	ctx, cancel := db.call()
	defer cancel()
	var any bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM git_refs WHERE value <> '')`).Scan(&any)
	return err == nil && !any
}

// Reader implements gitstore.DB.
func (r *Repository) Reader() gitstore.DBTx { return gitTx{db: r.db, q: r.db.pool} }

// Write implements gitstore.DB: fn in one transaction, after the
// repository's lock.
func (r *Repository) Write(fn func(tx gitstore.DBTx) error) error {
	return r.db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+repoLockKey+`)`); err != nil {
			return fmt.Errorf("lock the memory repository: %w", err)
		}
		return fn(gitTx{db: r.db, q: tx, ctx: ctx})
	})
}

// call is the context of one call: the transaction's, or its own.
func (t gitTx) call() (context.Context, context.CancelFunc) {
	if t.ctx != nil {
		return t.ctx, func() {}
	}
	return t.db.call()
}

var kinds = map[string]int16{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

func kindName(k int16) string {
	for name, n := range kinds {
		if n == k {
			return name
		}
	}
	return ""
}

func objectID(id string) ([]byte, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 20 {
		return nil, fmt.Errorf("object id %q: want 40 hex digits", id)
	}
	return b, nil
}

// Object implements gitstore.DBObjects.
func (t gitTx) Object(id string) (string, []byte, bool, error) {
	key, err := objectID(id)
	if err != nil {
		return "", nil, false, err
	}
	ctx, cancel := t.call()
	defer cancel()
	var kind int16
	var data []byte
	err = t.q.QueryRow(ctx, `SELECT kind, data FROM git_objects WHERE id = $1`, key).Scan(&kind, &data)
	if errNoRows(err) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("read object %.8s: %w", id, err)
	}
	return kindName(kind), data, true, nil
}

// PutObject implements gitstore.DBObjects.
func (t gitTx) PutObject(id, kind string, data []byte) error {
	key, err := objectID(id)
	if err != nil {
		return err
	}
	k, ok := kinds[kind]
	if !ok {
		return fmt.Errorf("object %.8s: unknown kind %q", id, kind)
	}
	if data == nil {
		data = []byte{}
	}
	ctx, cancel := t.call()
	defer cancel()
	if _, err := t.q.Exec(ctx, `INSERT INTO git_objects (id, kind, data) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, key, k, data); err != nil {
		return fmt.Errorf("store object %.8s: %w", id, err)
	}
	return nil
}

// GetObjects implements gitstore.DBObjects.
func (t gitTx) GetObjects(ids []string) ([]gitstore.DBObject, error) {
	keys := make([][]byte, 0, len(ids))
	for _, id := range ids {
		key, err := objectID(id)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	ctx, cancel := t.call()
	defer cancel()
	rows, err := t.q.Query(ctx, `SELECT id, kind, data FROM git_objects WHERE id = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("read objects: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gitstore.DBObject, error) {
		var id, data []byte
		var kind int16
		err := r.Scan(&id, &kind, &data)
		if data == nil {
			data = []byte{}
		}
		return gitstore.DBObject{ID: hex.EncodeToString(id), Kind: kindName(kind), Data: data}, err
	})
	if err != nil {
		return nil, fmt.Errorf("read objects: %w", err)
	}
	return out, nil
}

// PutObjects implements gitstore.DBObjects: one statement.
func (t gitTx) PutObjects(objs []gitstore.DBObject) error {
	ids, ks, datas := make([][]byte, 0, len(objs)), make([]int16, 0, len(objs)), make([][]byte, 0, len(objs))
	for _, o := range objs {
		key, err := objectID(o.ID)
		if err != nil {
			return err
		}
		k, ok := kinds[o.Kind]
		if !ok {
			return fmt.Errorf("object %.8s: unknown kind %q", o.ID, o.Kind)
		}
		data := o.Data
		if data == nil {
			data = []byte{}
		}
		ids, ks, datas = append(ids, key), append(ks, k), append(datas, data)
	}
	ctx, cancel := t.call()
	defer cancel()
	if _, err := t.q.Exec(ctx, `INSERT INTO git_objects (id, kind, data)
		SELECT * FROM unnest($1::bytea[], $2::smallint[], $3::bytea[]) ON CONFLICT (id) DO NOTHING`, ids, ks, datas); err != nil {
		return fmt.Errorf("store objects: %w", err)
	}
	return nil
}

// Objects implements gitstore.DBObjects: the ids within the range the
// prefix spans.
func (t gitTx) Objects(prefix, kind string) ([]string, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return nil, err
	}
	sql, args := `SELECT id FROM git_objects WHERE id >= $1`, []any{lo}
	if hi != nil {
		sql += ` AND id < $2`
		args = append(args, hi)
	}
	if kind != "" {
		k, ok := kinds[kind]
		if !ok {
			return nil, fmt.Errorf("unknown object kind %q", kind)
		}
		sql += fmt.Sprintf(` AND kind = $%d`, len(args)+1)
		args = append(args, k)
	}
	ctx, cancel := t.call()
	defer cancel()
	rows, err := t.q.Query(ctx, sql+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id []byte
		err := r.Scan(&id)
		return hex.EncodeToString(id), err
	})
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	return ids, nil
}

// prefixRange is the range of ids that start with the hex prefix: [lo,
// hi), hi nil when it is unbounded.
func prefixRange(prefix string) (lo, hi []byte, err error) {
	prefix = strings.ToLower(prefix)
	if strings.Trim(prefix, "0123456789abcdef") != "" || len(prefix) > 40 {
		return nil, nil, fmt.Errorf("object id prefix %q: want hex digits", prefix)
	}
	low, high := prefix, prefix
	if len(prefix)%2 == 1 {
		low, high = prefix+"0", prefix+"f"
	}
	lo, _ = hex.DecodeString(low)
	top, _ := hex.DecodeString(high)
	// hi is the first id past every one starting with the prefix: the
	// prefix's last byte raised, carrying.
	for i := len(top) - 1; i >= 0; i-- {
		if top[i] < 0xff {
			top[i]++
			return lo, top[:i+1], nil
		}
	}
	return lo, nil, nil
}

// Ref implements gitstore.DBRefs.
func (t gitTx) Ref(name string) (string, bool, error) {
	ctx, cancel := t.call()
	defer cancel()
	var v string
	err := t.q.QueryRow(ctx, `SELECT value FROM git_refs WHERE name = $1`, name).Scan(&v)
	if errNoRows(err) || err == nil && v == "" {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", name, err)
	}
	return v, true, nil
}

// SetRef implements gitstore.DBRefs: the compare and the write are one
// statement, so no other writer comes between them.
func (t gitTx) SetRef(name, value, old string) (bool, error) {
	ctx, cancel := t.call()
	defer cancel()
	var tag pgconn.CommandTag
	var err error
	switch old {
	case gitstore.AnyValue:
		tag, err = t.q.Exec(ctx, `INSERT INTO git_refs (name, value, version) VALUES ($1, $2, nextval('git_refs_version'))
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, version = excluded.version`, name, value)
	case "":
		tag, err = t.q.Exec(ctx, `INSERT INTO git_refs (name, value, version) VALUES ($1, $2, nextval('git_refs_version'))
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, version = excluded.version WHERE git_refs.value = ''`, name, value)
	default:
		tag, err = t.q.Exec(ctx, `UPDATE git_refs SET value = $2, version = nextval('git_refs_version') WHERE name = $1 AND value = $3`, name, value, old)
	}
	if err != nil {
		return false, fmt.Errorf("set %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Refs implements gitstore.DBRefs. The version is the highest a committed
// change has: a write in flight, holding the lock, gets a higher one.
func (t gitTx) Refs(prefix string, since int64) (map[string]string, int64, error) {
	ctx, cancel := t.call()
	defer cancel()
	var version int64
	if err := t.q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM git_refs`).Scan(&version); err != nil {
		return nil, 0, fmt.Errorf("read the refs' version: %w", err)
	}
	out := map[string]string{}
	if since < 0 {
		return out, version, nil
	}
	rows, err := t.q.Query(ctx, `SELECT name, value FROM git_refs WHERE left(name, length($1)) = $1 AND version > $2 AND version <= $3`,
		prefix, since, version)
	if err != nil {
		return nil, 0, fmt.Errorf("list refs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, 0, fmt.Errorf("list refs: %w", err)
		}
		out[name] = value
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list refs: %w", err)
	}
	return out, version, nil
}

// Record implements gitstore.DBRecords.
func (t gitTx) Record(name string) ([]byte, error) {
	ctx, cancel := t.call()
	defer cancel()
	var data []byte
	err := t.q.QueryRow(ctx, `SELECT data FROM git_records WHERE name = $1`, name).Scan(&data)
	if errNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read record %s: %w", name, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// SetRecord implements gitstore.DBRecords.
func (t gitTx) SetRecord(name string, data []byte) error {
	ctx, cancel := t.call()
	defer cancel()
	var err error
	if data == nil {
		_, err = t.q.Exec(ctx, `DELETE FROM git_records WHERE name = $1`, name)
	} else {
		_, err = t.q.Exec(ctx, `INSERT INTO git_records (name, data) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET data = excluded.data`, name, data)
	}
	if err != nil {
		return fmt.Errorf("write record %s: %w", name, err)
	}
	return nil
}

// Records implements gitstore.DBRecords.
func (t gitTx) Records(prefix string) (map[string][]byte, error) {
	ctx, cancel := t.call()
	defer cancel()
	rows, err := t.q.Query(ctx, `SELECT name, data FROM git_records WHERE left(name, length($1)) = $1`, prefix)
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var name string
		var data []byte
		if err := rows.Scan(&name, &data); err != nil {
			return nil, fmt.Errorf("list records: %w", err)
		}
		if data == nil {
			data = []byte{}
		}
		out[name] = data
	}
	return out, rows.Err()
}

var _ store.LedgerTx = gitTx{}

// PutRecord implements store.LedgerTx: the ledger's record, written in the
// memory repository's transaction.
func (t gitTx) PutRecord(rec []byte) error {
	ctx, cancel := t.call()
	defer cancel()
	if _, err := t.q.Exec(ctx, `UPDATE dream_ledger SET record = $1, updated_at = now() WHERE id = 1`, string(rec)); err != nil {
		return fmt.Errorf("write dream ledger: %w", err)
	}
	return nil
}

var _ store.FencedTx = gitTx{}

// CheckFence implements store.FencedTx: the lease is checked, and kept at
// its epoch, within the memory repository's transaction.
func (t gitTx) CheckFence(f store.Fence) error {
	ctx, cancel := t.call()
	defer cancel()
	return checkFence(ctx, t.q, f.Lease, f.Epoch)
}

// SetDreamCursor implements store.LedgerTx.
func (t gitTx) SetDreamCursor(n int) error {
	ctx, cancel := t.call()
	defer cancel()
	if _, err := t.q.Exec(ctx, `UPDATE archive_counters SET value = $1 WHERE name = 'dream'`, n); err != nil {
		return fmt.Errorf("write the dream cursor: %w", err)
	}
	return nil
}
