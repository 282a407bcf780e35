package dream_test

import (
	"testing"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The ledger's files keep the store's ledger contract.
func TestStoreEmbeddedDreamLedger(t *testing.T) {
	storetest.RunDreamLedger(t, func(t *testing.T) (store.DreamLedger, func(*testing.T) store.DreamLedger) {
		dir := t.TempDir()
		return dream.NewLedgerFiles(dir), func(*testing.T) store.DreamLedger { return dream.NewLedgerFiles(dir) }
	})
}
