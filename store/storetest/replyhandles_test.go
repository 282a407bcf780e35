package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The embedded engine's reply handles (a file in the state directory)
// keep the contract, and so do the adapters' own in memory, within one
// process.
func TestStoreEmbeddedReplyHandles(t *testing.T) {
	storetest.RunReplyHandles(t, func(t *testing.T) (store.ReplyHandles, func(*testing.T) store.ReplyHandles) {
		path := filepath.Join(t.TempDir(), "state", "reply-handles.json")
		return store.OpenReplyHandlesFile(path), func(*testing.T) store.ReplyHandles { return store.OpenReplyHandlesFile(path) }
	})
}

func TestStoreMemoryReplyHandles(t *testing.T) {
	storetest.RunReplyHandles(t, func(t *testing.T) (store.ReplyHandles, func(*testing.T) store.ReplyHandles) {
		m := &channels.MemoryReplyHandles{}
		return m, func(*testing.T) store.ReplyHandles { return m }
	})
}
