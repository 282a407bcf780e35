package postgres_test

import (
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

func TestStorePostgresRecall(t *testing.T) {
	storetest.RunRecall(t, func(t *testing.T) (store.RecallIndex, func(*testing.T) store.RecallIndex) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).Recall(), func(t *testing.T) store.RecallIndex { return open(t, dsn, nil).Recall() }
	})
}
