package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
)

// Dreamer is what the /dream commands need of Dream.
type Dreamer interface {
	Run(ctx context.Context, trigger string, progress func(string)) (dream.Report, error)
	Restore(rev string) (dream.RestoreResult, error)
	Status() dream.Status
}

// MemoryLog is what /dream-log and /dream-restore read of the memory
// repository.
type MemoryLog interface {
	Latest(subjectPrefix string) (gitstore.Commit, gitstore.Diff, error)
	Show(rev string) (gitstore.Commit, gitstore.Diff, error)
	Log(n int, subjectPrefix string) ([]gitstore.Commit, error)
	// LatestAfter finds the newest commit after sha whose subject starts
	// with subjectPrefix (a restore that undid the latest Dream commit).
	LatestAfter(sha, subjectPrefix string) (gitstore.Commit, bool, error)
}
