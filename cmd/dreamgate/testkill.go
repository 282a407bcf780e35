package main

import (
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// testKillEnv is a fault switch for the end-to-end and chaos tests only,
// never for use: DREAMGATE_TEST_KILL_AFTER=<point>[,<count>] makes the
// process SIGKILL itself right after the count-th write (default the
// first) at that kill point has reached the disk. The point names the
// write; anything else in the variable is refused with a warning and does
// nothing.
const testKillEnv = "DREAMGATE_TEST_KILL_AFTER"

// killPoints are the writes the switch can stop after, each reported by
// the library that makes it through its AfterWrite hook. A new write gets a
// name here and one hook call where it happens.
var killPoints = []string{
	"session-append",   // a line of a session's message file (gateway/session)
	"session-meta",     // a session's metadata record (gateway/session)
	"history-append",   // an archive entry in history.jsonl, before its session records it (history)
	"history-cursor",   // memory/.cursor after an append (history)
	"history-compact",  // the rewrite of history.jsonl by compaction (history)
	"dream-edit",       // one edit_file of Dream's phase 2, in its copy of the files (dream)
	"dream-deep-write", // a deep Dream's copy of the files written, before its step lands (dream)
	"dream-commit",     // a commit of the memory repository by Dream, the branch moved (dream)
	"dream-cursor",     // memory/.dream_cursor, moved by the Dream ledger (history)
	"dream-ledger",     // memory/.dream_ledger, Dream's progress and intent (dream)
	"history-rescope",  // history.jsonl rewritten with a move's entries in their new scope (history)
	// The memory repository's ref write (gitstore): the new value synced
	// in <ref>.lock, then the lock renamed over the ref.
	"gitstore-ref-lock",
	"gitstore-ref",
	// One file a step writes from its commit, after the branch moved
	// (gitstore): a kill between a deep Dream's COLD.md and USER.md.
	"gitstore-checkout",
	// A write across lines (a move's, several scopes' refs at once) with
	// its journal naming every move in place, before any ref is renamed
	// (gitstore).
	"gitstore-journal",
	// The memory repository in PostgreSQL (gitstore): a write's objects,
	// refs and commit index sent, its transaction not yet committed; and
	// committed.
	"gitstore-db-write",
	"gitstore-db-commit",
}

// killHook returns the AfterWrite hook the switch asks for, nil when it is
// off.
func killHook(getenv func(string) string, logger *slog.Logger) func(point string) {
	if getenv == nil {
		return nil
	}
	v := getenv(testKillEnv)
	if v == "" {
		return nil
	}
	point, countText, hasCount := strings.Cut(v, ",")
	count := 1
	if hasCount {
		n, err := strconv.Atoi(countText)
		if err != nil || n < 1 {
			logger.Warn("test fault switch ignored: the count must be a positive integer", "env", testKillEnv)
			return nil
		}
		count = n
	}
	if !slices.Contains(killPoints, point) {
		logger.Warn("test fault switch ignored: unknown kill point", "env", testKillEnv, "point", point, "known", strings.Join(killPoints, " "))
		return nil
	}
	logger.Warn("test fault switch on: the process kills itself after a write", "env", testKillEnv, "point", point, "count", count)
	var seen atomic.Int64
	return func(p string) {
		if p != point || seen.Add(1) != int64(count) {
			return
		}
		if syscall.Kill(os.Getpid(), syscall.SIGKILL) == nil {
			select {} // the signal is on its way; nothing more may be written
		}
	}
}
