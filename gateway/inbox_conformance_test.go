package gateway

import (
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The inbox file keeps the store's inbox contract.
func TestStoreEmbeddedInbox(t *testing.T) {
	storetest.RunInbox(t, func(t *testing.T) (store.Inbox, func(*testing.T) store.Inbox) {
		path := filepath.Join(t.TempDir(), "inbox.jsonl")
		open := func(t *testing.T) store.Inbox {
			f, err := OpenInboxFile(path, storetest.InboxNow)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}
		return open(t), open
	})
}
