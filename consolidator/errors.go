package consolidator

import "errors"

var (
	// ErrNegativeCursor: SetDreamCursor was given a cursor below 0.
	ErrNegativeCursor = errors.New("cursor must not be negative")
	// ErrNotArchived: an archive entry could not be written to history.jsonl.
	// The session's LastConsolidated was not advanced past the messages it
	// would have covered, so they are archived again on the next attempt.
	ErrNotArchived = errors.New("archive entry not written")
)
