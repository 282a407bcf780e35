package main

import (
	"os"
	"syscall"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/history"
)

// testKillEnv is a fault switch for the end-to-end tests only, never for
// use: DREAMGATE_TEST_KILL_AFTER=history-append makes the process SIGKILL
// itself right after an archive entry reaches history.jsonl and before
// the session records it, the exact moment a crash-safe archive must
// survive. DREAMGATE_TEST_KILL_AFTER=dream-edit kills it right after a
// Dream's first edit reached a memory file, before any commit holds it.
// No other value does anything.
const testKillEnv = "DREAMGATE_TEST_KILL_AFTER"

// archive is the history store as the consolidator gets it: the store
// itself, or under the test switch the store wrapped by killAfterAppend.
func (a *app) archive() consolidator.History {
	if a.cfg.getenv != nil && a.cfg.getenv(testKillEnv) == "history-append" {
		a.logger.Warn("test fault switch on: the process kills itself after its first archive entry", "env", testKillEnv)
		return killAfterAppend{a.history}
	}
	return a.history
}

// killAfterAppend kills the process once an archive entry is on disk.
type killAfterAppend struct{ *history.Store }

func (k killAfterAppend) AppendFrom(content, sessionKey string, src history.Source) (history.Entry, error) {
	e, err := k.Store.AppendFrom(content, sessionKey, src)
	if err == nil && syscall.Kill(os.Getpid(), syscall.SIGKILL) == nil {
		select {} // the signal is on its way; nothing more may be written
	}
	return e, err
}

// dreamHook is Dream's hook at its named points: nil, or under the test
// switch a SIGKILL at dream.PointEdit.
func (a *app) dreamHook() func(point string) {
	if a.cfg.getenv == nil || a.cfg.getenv(testKillEnv) != dream.PointEdit {
		return nil
	}
	a.logger.Warn("test fault switch on: the process kills itself after Dream's first edit", "env", testKillEnv)
	return func(point string) {
		if point == dream.PointEdit && syscall.Kill(os.Getpid(), syscall.SIGKILL) == nil {
			select {} // the signal is on its way; nothing more may be written
		}
	}
}
