package storetest_test

import (
	"testing"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The embedded engine's used links are kept in memory.
func TestStoreEmbeddedNonces(t *testing.T) {
	storetest.RunNonces(t, func(*testing.T) store.Nonces { return &store.MemoryNonces{} })
}

// The embedded engine's post record is kept in memory.
func TestStoreEmbeddedPosts(t *testing.T) {
	storetest.RunPosts(t, func(*testing.T) (store.Posts, func(*testing.T) store.Posts) { return &store.MemoryPosts{}, nil })
}
