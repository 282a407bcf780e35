package postgres_test

import (
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

func TestStorePostgresReplyHandles(t *testing.T) {
	storetest.RunReplyHandles(t, func(t *testing.T) (store.ReplyHandles, func(*testing.T) store.ReplyHandles) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).ReplyHandles(), func(t *testing.T) store.ReplyHandles { return open(t, dsn, nil).ReplyHandles() }
	})
}
