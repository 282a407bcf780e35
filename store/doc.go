// Package store is program state behind small interfaces with two engines:
// what dreamgate keeps between turns and across restarts — the archive
// (history entries and the cursors over them), and, as they move behind it,
// the conversations, the inbox, Dream's ledger, the recall index, the
// memory page's key and used sign-in links, and the platforms' answer
// handles — described once here, as record types and the contracts their
// engines keep.
//
// Two engines implement each contract:
//
//   - embedded, the default: the files and SQLite of a one-process
//     workspace, implemented where they always were (history for the
//     archive, gateway/session for the conversations, …), unchanged for a
//     one-process user and nanobot-compatible (memory/history.jsonl,
//     memory/.cursor, memory/.dream_cursor);
//   - PostgreSQL (store/postgres), chosen by the config's store.postgres or
//     DREAMGATE_POSTGRES_URL, through pgx, with numbered schema migrations
//     applied at start.
//
// One conformance suite (store/storetest) runs against both: whatever one
// engine promises, the other keeps. The copy between them (dreamgate
// migrate --to-postgres, dreamgate export) goes through these contracts
// alone (Copy*), so it works from any engine to any other.
//
// It sits below memory and history, above gitstore: it imports audience
// and internal leaves only; its engines import what they wrap.
package store
