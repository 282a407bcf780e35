package history

// hook reports a finished write to Options.AfterWrite.
func (s *Store) hook(point string) {
	if s.afterWrite != nil {
		s.afterWrite(point)
	}
}
