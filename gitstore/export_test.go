package gitstore

// SetPackThreshold lets tests pack small repositories.
func SetPackThreshold(s *Store, n int) { s.packThreshold = n }

// CommitIndexFile is the name of the commit index under the git directory.
const CommitIndexFile = indexFile
