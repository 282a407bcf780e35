package dream

import (
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
)

// staleLockClearer is the optional capability of a Repo to remove git lock
// files a killed process left (*gitstore.Store has it). A Repo without it
// keeps its own, slower rule for stale locks.
type staleLockClearer interface {
	ClearStaleLocks() ([]gitstore.StaleLock, error)
}

// clearStaleGitLocks runs right after the Dream lock is taken. Every writer
// of the memory repository among our processes (a Dream, a restore) holds
// that lock, so a git lock found now belongs to a process that died
// holding it — usually a Dream killed mid-commit. Left there, it would fail
// every Dream, restore and git command until it aged out.
func (d *Dreamer) clearStaleGitLocks() {
	c, ok := d.repo.(staleLockClearer)
	if !ok {
		return
	}
	removed, err := c.ClearStaleLocks()
	if err != nil {
		// The commit that needs the lock will say what is wrong.
		d.log.Warn("dream could not remove a stale git lock", "err", err)
		return
	}
	for _, l := range removed {
		d.log.Warn("dream removed a stale git lock left by a process that no longer holds the Dream lock",
			"lock", l.Name, "age", l.Age.Round(time.Second))
	}
}
