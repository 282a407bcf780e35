package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The cluster answers, and each test's schema is its own: a table made
// through one test's DSN is not seen through another's.
func TestPostgresSchemaPerTest(t *testing.T) {
	a, b := DSN(t), DSN(t)
	ctx := t.Context()
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(context.Background())
	if _, err := ca.Exec(ctx, "CREATE TABLE only_here (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(context.Background())
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here' AND schemaname = current_schema()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the other test's schema holds the table: %d", n)
	}
}
