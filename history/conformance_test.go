package history_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The embedded engine's archive keeps the store's contract.
func TestStoreEmbeddedArchive(t *testing.T) {
	storetest.RunArchive(t, func(t *testing.T, now func() time.Time) storetest.Archive {
		dir := filepath.Join(t.TempDir(), "memory")
		open := func(t *testing.T) store.History {
			s, err := history.Open(dir, history.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return storetest.Archive{
			History: open(t),
			Reopen:  open,
			Tear: func(t *testing.T) {
				f, err := os.OpenFile(filepath.Join(dir, "history.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString(`{"cursor": 4, "timestamp": "2026-04-03 09:30", "content": "- half`); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
