// Package gitdbtest is the contract test of gitstore.DB, run by every
// engine that keeps the memory repository in a database (store/postgres):
// go-git's own operations on the engine through gitstore.NewDBStorage (a
// bare repository, objects, refs with compare-and-swap, config, index,
// shallow list, submodules, a write rolled back), a Store over it
// (gitstore.OpenDB: each scope's line, one history, a second process),
// and the copies to and from a workspace, which `git fsck --full` and
// `git status` check.
//
// It is a test helper of the gitstore family: it imports gitstore and
// go-git, and nothing else of dreamgate's.
package gitdbtest
