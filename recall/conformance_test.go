package recall

import (
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The embedded engine keeps the recall index's contract.
func TestStoreEmbeddedRecall(t *testing.T) {
	storetest.RunRecall(t, func(t *testing.T) (store.RecallIndex, func(*testing.T) store.RecallIndex) {
		dir := filepath.Join(t.TempDir(), "recall")
		handle := func(t *testing.T) store.RecallIndex {
			f := OpenIndexFiles(dir)
			t.Cleanup(func() { _ = f.Close() })
			return f
		}
		return handle(t), handle
	})
}
