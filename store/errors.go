package store

import "errors"

// ErrSchemaTooNew: the database was migrated by a newer dreamgate than
// this one; the engine refuses to start on it rather than misread it.
var ErrSchemaTooNew = errors.New("the database's schema is newer than this dreamgate knows")
