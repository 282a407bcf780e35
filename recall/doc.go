// Package recall is total recall: a full-text index of everything said
// that memory no longer shows — the history archive's entries, the
// conversations' archived messages and each scope's cold memory — searched
// within the memory scopes an audience may read, and the chat tool that
// searches it.
//
// Every document belongs to one memory scope: an archive entry to its
// Scope (none: the default scope), a message to its conversation's
// audience's Home (the default scope for all when memory is shared), a
// cold-memory line to the scope whose folder holds the file. A scope's
// documents take a rowid range of their own, and a search passes the
// ranges of the scopes it may read to the index beside the words, apart
// from them: the words of a query are reduced to letters and digits, so no
// query can name a column, a scope or an operator, and no search returns
// what another scope holds.
//
// The index is a cache, rebuildable from those files: one SQLite database
// with an FTS5 table (modernc.org/sqlite, no cgo) in the state directory,
// owner-only. It is opened on first use, never at start. Each search first
// brings it up to date (at most every Options.Every, waiting at most
// Options.Wait, in a goroutine the Index owns): archive entries after the
// last cursor indexed, the messages conversations archived since their
// last read (files whose size and time did not change are not opened),
// cold-memory files that changed. It is rebuilt, with a log line, when it
// is missing, damaged, of another version or built under the other memory
// setting. Entries compaction dropped from history.jsonl stay in the index
// until it is rebuilt.
//
// Concurrency: one writer at a time, across processes, by a lock file
// (index.lock): the gateway and a CLI command may both search, and the one
// that takes the lock updates while the other answers from what is
// indexed (SQLite's WAL mode lets readers read while the writer writes).
// Progress is written in the transaction of the documents it covers, so a
// killed update resumes after its last commit. The session files are read
// without their locks.
//
// Ranking: within each scope, a row scores the sum over the query's words
// it holds of log(1 + documents/rows holding the word), a word counting at
// most its newest 1,000 rows; rows holding every word rank first; newer
// first among equals. An embeddings endpoint, when one is configured some
// day, would re-rank the candidates search collects (search.go, before
// the cut to the limit); recall works without one.
//
// It imports history (the entry type), agent (the tool), llm and audience,
// and workspace for the cold-memory file's name; it reads the session
// files through the Conversations interface, which cmd fills from
// gateway/session, so that gateway may import it for its turns.
package recall
