// Package recall is total recall: a full-text index of everything said
// that memory no longer shows — the history archive's entries, the
// conversations' archived messages and each scope's cold memory — searched
// within the memory scopes an audience may read, and the chat tool that
// searches it.
//
// Every document belongs to one memory scope: an archive entry to its
// Scope (none: the default scope), a message to its conversation's
// audience's Home (the default scope for all when memory is shared), a
// cold-memory line to the scope whose folder holds the file. A search asks
// the engine for one scope's rows at a time, the scope passed beside the
// words, apart from them (the embedded engine keeps a full-text table per
// scope; PostgreSQL's rows carry their scope): the words of a query are
// reduced to letters and digits, so no query can name a column, a scope or
// an operator, and no search returns what another scope holds.
//
// The index is kept by an engine (store.RecallIndex), rebuildable from
// those sources: by default IndexFiles, one SQLite database with an FTS5
// table per scope (modernc.org/sqlite, no cgo) in the state directory,
// owner-only, a cache of each process's own; on PostgreSQL the database's
// tables (postgres.Recall), which every process shares. An engine keeps
// the documents and finds a scope's newest ones holding words; what is
// indexed, in which scope, and the ranking are this package's, the same
// for both. The index is opened on first use, never at start. Each search
// first brings it up to date (at most every Options.Every, waiting at
// most Options.Wait, in a goroutine the Index owns): archive entries after
// the last cursor indexed, the messages conversations archived since their
// last read (files whose stamp did not change are not read), cold-memory
// files that changed. How far it read is kept in the index beside what it
// read (marks), so any process catches up from where the last update of
// any process stopped. It is rebuilt, with a log line, when it is
// unusable (damaged, of another version) or was built under the other
// memory setting. Entries compaction dropped from the archive stay in the
// index until it is rebuilt.
//
// The index is a catch-up from the sources, not written by the archive's
// and the conversations' own writers, on PostgreSQL too: the rules of
// what a document is and which scope it belongs to (the memory setting,
// an entry moved by the operator, a speaker's name, cold lines shown with
// what replaced them) stay here, written once; cold memory has no writer
// in the store; and a turn does not pay for indexing.
//
// Concurrency: one writer at a time, across processes (the embedded
// engine's lock file, index.lock; PostgreSQL's advisory lock): the
// gateway and a CLI command may both search, and the one that takes the
// lock updates while the other answers from what is indexed. Progress is
// written in the transaction of the documents it covers, so a killed
// update resumes after its last commit. The session files are read
// without their locks.
//
// Ranking: within each scope, a row scores the sum over the query's words
// it holds of log(1 + documents/rows holding the word), a word counting at
// most its newest 1,000 rows; rows holding every word rank first; newer
// first among equals. An embeddings endpoint, when one is configured some
// day, would re-rank the candidates search collects (search.go, before
// the cut to the limit); recall works without one.
//
// It imports history (the entry type), agent (the tool), llm, audience,
// memory and store (the engine's contract); it reads the conversations
// through the Conversations interface, which cmd fills from
// gateway/session, so that gateway may import it for its turns.
package recall
