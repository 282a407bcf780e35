package gitstore

import "time"

// SetPackThreshold lets tests pack small repositories.
func SetPackThreshold(s *Store, n int) { s.packThreshold = n }

// TestTracked is what the tests track: the memory files of a dreamgate
// workspace (the caller's layout; gitstore itself knows no file names).
var TestTracked = []string{"SOUL.md", "USER.md", "memory/MEMORY.md"}

// TestPatterns are the scope folders' memory files, as dreamgate tracks
// them.
var TestPatterns = []string{"scopes/*/SOUL.md", "scopes/*/USER.md", "scopes/*/memory/MEMORY.md"}

// CommitIndexFile is the name of the commit index under the git directory.
const CommitIndexFile = indexFile

// SetLockWait shortens how long the Store waits for another holder of a
// lock file.
func SetLockWait(s *Store, d time.Duration) { s.lockWait = d }
