package pgtest

import (
	"context"
	"os"
	osexec "os/exec"
	"strings"
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

// Without a cluster a PostgreSQL test is skipped, saying why, but under
// CI=true it fails: a CI run whose cluster did not start cannot pass by
// skipping. Each case runs this test binary again without the cluster's
// variable.
func TestSkippedWithoutAClusterButNotUnderCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		Server(t)
		return
	}
	for _, tc := range []struct {
		ci, want string
		fails    bool
	}{
		{"true", "may not be skipped under CI", true},
		{"", "SKIP", false},
	} {
		cmd := osexec.Command(os.Args[0], "-test.run=^TestSkippedWithoutAClusterButNotUnderCI$", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, EnvDSN+"=") && !strings.HasPrefix(kv, "CI=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PGTEST_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fails || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), EnvDSN+" is not set") {
			t.Errorf("CI=%q without a cluster: %v\n%s", tc.ci, err, out)
		}
	}
}
