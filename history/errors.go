package history

import "errors"

// ErrNegativeCursor: SetDreamCursor was given a cursor below 0.
var ErrNegativeCursor = errors.New("cursor must not be negative")
