package gitstore

// SetPackThreshold lets tests pack small repositories.
func SetPackThreshold(s *Store, n int) { s.packThreshold = n }
