package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/jackc/pgx/v5"
)

// A database a newer dreamgate migrated is refused, in one sentence that
// says what to do, and nothing in it is changed.
func TestPostgresRefusesNewerSchema(t *testing.T) {
	dsn := pgtest.DSN(t)
	open(t, dsn, nil)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	newer := postgres.SchemaVersion() + 1
	if _, err := conn.Exec(t.Context(), `INSERT INTO dreamgate_schema (version_id, is_applied) VALUES ($1, true)`, newer); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), dsn, postgres.Options{})
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open on a newer schema: %v", err)
	}
	if msg := err.Error(); strings.Count(msg, ". ") > 0 || !strings.Contains(msg, "at least as new") {
		t.Fatalf("not one sentence that says what to do: %q", msg)
	}
}

// Processes starting at once on an empty database migrate it once and
// all start.
func TestPostgresMigratesOnceUnderConcurrentStarts(t *testing.T) {
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
			if err != nil {
				errs <- err
				return
			}
			db.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM dreamgate_schema WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != int(postgres.SchemaVersion()) {
		t.Fatalf("%d migrations recorded, want %d (each once)", applied, postgres.SchemaVersion())
	}
}

// A DSN's password never reaches a log line or an error.
func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://ana:s3cret@db.example:5432/dg?sslmode=require", "postgres://ana:xxxxx@db.example:5432/dg?sslmode=require"},
		{"postgres://ana@db/dg", "postgres://ana@db/dg"},
		{"postgres://db/dg?password=s3cret&sslmode=disable", "postgres://db/dg?password=xxxxx&sslmode=disable"},
		{"host=db user=ana password=s3cret dbname=dg", "host=db user=ana password=xxxxx dbname=dg"},
		{"host=db password='s3 cret' dbname=dg", "host=db password=xxxxx dbname=dg"},
	} {
		if got := postgres.RedactDSN(tc.in); got != tc.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	_, err := postgres.Open(t.Context(), "postgres://ana:s3cret@127.0.0.1:1/dg?connect_timeout=1", postgres.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a failed connection's error: %v", err)
	}
}

// A server that cannot be reached is one line, said once: pgx lists each
// address it tried on a line of its own, twice under sslmode=prefer (with
// TLS, then without).
func TestUnreachableServerIsOneLine(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://ana:s3cret@127.0.0.1:1/dg?connect_timeout=1", postgres.Options{})
	if err == nil {
		t.Fatal("Open of a server that is not there succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Count(msg, "connection refused") != 1 || !strings.Contains(msg, "127.0.0.1:1") {
		t.Fatalf("not one line naming the address once: %q", msg)
	}
}
