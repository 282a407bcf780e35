package store

import "errors"

// ErrSchemaTooNew: the database was migrated by a newer dreamgate than
// this one; the engine refuses to start on it rather than misread it.
var ErrSchemaTooNew = errors.New("the database's schema is newer than this dreamgate knows")

// ErrLeaseLost: a write made under a lease (a scope's Dream) whose epoch
// is no longer the current one — its holder lost the lease (its
// connection ended) and another process took it over — is refused.
var ErrLeaseLost = errors.New("the lease this write was made under was taken over by another process")
