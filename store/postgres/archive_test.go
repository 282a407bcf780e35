package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// open opens the engine on dsn, closed when the test ends.
func open(t testing.TB, dsn string, now func() time.Time) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestStorePostgresArchive(t *testing.T) {
	storetest.RunArchive(t, func(t *testing.T, now func() time.Time) storetest.Archive {
		dsn := pgtest.DSN(t)
		return storetest.Archive{
			History: open(t, dsn, now).Archive(),
			Reopen:  func(t *testing.T) store.History { return open(t, dsn, now).Archive() },
		}
	})
}

func TestStorePostgresConversationContract(t *testing.T) {
	storetest.RunConversations(t, func(t *testing.T) (store.Conversations, func(*testing.T) store.Conversations) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).Conversations(), func(t *testing.T) store.Conversations { return open(t, dsn, nil).Conversations() }
	})
}

func TestStorePostgresInbox(t *testing.T) {
	storetest.RunInbox(t, func(t *testing.T) (store.Inbox, func(*testing.T) store.Inbox) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).Inbox("inbox"), func(t *testing.T) store.Inbox { return open(t, dsn, nil).Inbox("inbox") }
	})
}

func TestStorePostgresNonces(t *testing.T) {
	storetest.RunNonces(t, func(t *testing.T) store.Nonces { return open(t, pgtest.DSN(t), nil).Nonces("web-link") })
}

func TestStorePostgresSecrets(t *testing.T) {
	storetest.RunSecrets(t, func(t *testing.T) (store.Secrets, func(*testing.T) store.Secrets) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).Secrets(), func(t *testing.T) store.Secrets { return open(t, dsn, nil).Secrets() }
	})
}

func TestStorePostgresDreamLedger(t *testing.T) {
	storetest.RunDreamLedger(t, func(t *testing.T) (store.DreamLedger, func(*testing.T) store.DreamLedger) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).DreamLedger(), func(t *testing.T) store.DreamLedger { return open(t, dsn, nil).DreamLedger() }
	})
}

func TestStorePostgresPosts(t *testing.T) {
	storetest.RunPosts(t, func(t *testing.T) (store.Posts, func(*testing.T) store.Posts) {
		dsn := pgtest.DSN(t)
		return open(t, dsn, nil).Posts(), func(t *testing.T) store.Posts { return open(t, dsn, nil).Posts() }
	})
}
