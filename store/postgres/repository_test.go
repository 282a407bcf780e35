package postgres_test

import (
	"context"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/gitstore/gitdbtest"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// The memory repository in PostgreSQL keeps gitstore.DB's contract: go-git's
// own operations, a Store over it with every scope's line, and the copies
// to and from a workspace that git checks.
func TestPostgresRepository(t *testing.T) {
	gitdbtest.Run(t, func(t *testing.T) gitstore.DB {
		db, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db.Repository()
	})
}
