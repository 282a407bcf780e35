// Package postgres is the store's PostgreSQL engine: program state in one
// database, for a workspace several processes share (or one process that
// should keep nothing on its disk but the memory files). It implements the
// store's contracts (store.History, …) through pgx, and its schema is the
// numbered SQL files in migrations/, embedded, applied at Open by goose
// under a lock (two processes starting at once migrate once).
//
// Open refuses a database whose schema is newer than the files this binary
// holds (store.ErrSchemaTooNew), in one sentence. Schema changes expand
// before they contract (migrations/README.md), so two versions can run
// side by side during an upgrade.
//
// pgx and goose types never leave the package. A DSN is never logged; its
// password is redacted (RedactDSN) wherever it must be shown.
//
// The contracts' methods take no context (the embedded engine's are file
// calls); each call here runs under its own deadline (Options.Timeout)
// derived from the DB's lifetime, which Close ends.
package postgres
