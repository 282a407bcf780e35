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
