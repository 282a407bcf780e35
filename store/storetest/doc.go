// Package storetest is the store's conformance suite: one set of tests
// that every engine's implementation of a contract passes — the embedded
// one (history, gateway/session, …) in its own package's tests, the
// PostgreSQL one in store/postgres's. Whatever one engine promises
// (order, cursors, once-only, recovery, concurrency), the other keeps; a
// promise only one engine can make (a torn line's recovery) runs where
// the engine says it applies.
package storetest
