// Package history is the store of memory/history.jsonl, the archive the
// Consolidator writes and Dream reads: the only code that reads or writes
// that file and its cursor files (memory/.cursor, memory/.dream_cursor).
//
// The format is nanobot's, byte for byte, so an existing nanobot workspace
// keeps working: one JSON object a line with cursor, timestamp, content and
// an optional session_key; memory/.cursor holds the last cursor handed out
// and memory/.dream_cursor the highest one Dream has consumed. A legacy
// memory/HISTORY.md is migrated once. Archive entries add two fields of
// dreamgate's after those four, session_id and range (the session
// generation and the messages archived), which nanobot ignores and which
// make an archive idempotent across crashes (Source, Store.ArchivedAt).
// Archive entries of a memory scope other than the default one end with
// its name ("scope"); SinceIn reads one scope's entries, and Backlogs which
// scopes have entries after their cursor, without reading any content.
// memory/.history_index is this package's own shortcut past the entries
// Dream has read, with a table of the unread ones (nanobot neither reads
// nor writes it), so that a new process scans only what was appended
// since; deleting it costs one full scan of the archive, and an index of an
// earlier format is rebuilt the same way, silently. Only where the unread
// entries are, and their session and scope, is held in memory, and a
// content is read back when a caller asks for that entry.
//
// It is a leaf shared by consolidator and dream, which never import each
// other: it imports only workspace (the layout and the atomic write),
// audience (scope names) and store (the record types: Entry is store.Entry)
// of dreamgate's packages, and third-party types (flock) never appear in
// its API. It is the archive's embedded engine: *Store satisfies
// store.History, as store/postgres's Archive does.
package history
