// Package pgtest gives tests a real PostgreSQL: the throwaway cluster that
// .ci/run and make test-postgres start (.ci/postgres) names itself in
// DREAMGATE_TEST_POSTGRES, and each test gets a schema of its own in it,
// dropped when the test ends, so tests run in parallel without seeing each
// other's rows.
//
// Without that variable a test that needs PostgreSQL is skipped and says
// why; under CI=true it fails instead, so a CI run whose cluster did not
// start cannot pass by skipping. There is no mock database.
//
// It is a leaf for tests: it imports nothing of dreamgate's.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the test cluster's DSN.
const EnvDSN = "DREAMGATE_TEST_POSTGRES"

// Server returns the test cluster's DSN, or skips the test (fails it under
// CI=true) when there is none.
func Server(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	why := EnvDSN + " is not set: no PostgreSQL to test against (make test-postgres starts one and runs these tests)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("a PostgreSQL test may not be skipped under CI: %s; .ci/run starts a cluster with .ci/postgres", why)
	}
	t.Skip("skipped: " + why)
	return ""
}

// DSN returns a DSN for a schema of the test's own in the test cluster:
// created empty now, first on the search path of every connection made
// with the DSN, and dropped with everything in it when the test ends.
func DSN(t testing.TB) string {
	t.Helper()
	server := Server(t)
	name := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(ctx, server, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create a test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, server, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop the test schema %s: %v", name, err)
		}
	})
	dsn, err := WithSearchPath(server, name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// WithSearchPath returns dsn (a URL) with its connections' search_path set
// to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("the test cluster's DSN is not a URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
