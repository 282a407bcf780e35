package gitstore

// SetPackThreshold lets tests pack small repositories.
func SetPackThreshold(s *Store, n int) { s.packThreshold = n }

// TestTracked is what the tests track: the memory files of a dreamgate
// workspace (the caller's layout; gitstore itself knows no file names).
var TestTracked = []string{"SOUL.md", "USER.md", "memory/MEMORY.md"}

// CommitIndexFile is the name of the commit index under the git directory.
const CommitIndexFile = indexFile
