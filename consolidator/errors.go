package consolidator

import "errors"

var (
	// ErrNotArchived: an archive entry could not be written to history.jsonl.
	// The session's LastConsolidated was not advanced past the messages it
	// would have covered, so they are archived again on the next attempt.
	ErrNotArchived = errors.New("archive entry not written")
)
