package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/internal/leftovers"
	"github.com/dreamgate/dreamgate/workspace"
)

// RemoveLeftovers deletes the temp files of metadata writes that a killed
// process left in the sessions directory (the atomic write's temps, and the
// "<key>.meta.json.tmp*" names of earlier versions) once they are older
// than leftovers.MinAge, and returns how many it removed. Session files
// themselves are never touched.
func (st *Store) RemoveLeftovers() (int, error) {
	removed, err := leftovers.Sweep(st.dir, time.Now().Add(-leftovers.MinAge), func(name string) bool {
		return workspace.IsTemp(name) || strings.Contains(name, ".meta.json.tmp")
	})
	if err != nil {
		return removed, fmt.Errorf("remove leftover temp files: %w", err)
	}
	return removed, nil
}

// CloseIdleFiles closes the append handles of loaded sessions whose last
// message is older than cutoff, and returns how many it closed. The session
// stays loaded; its next Append opens the file again. A gateway that saw a
// thousand threads in the last hour thus holds open only the files of the
// conversations going on now.
func (st *Store) CloseIdleFiles(cutoff time.Time) int {
	closed := 0
	for _, s := range st.Loaded() {
		if s.LastActive().After(cutoff) {
			continue
		}
		if s.closeFile() {
			closed++
		}
	}
	return closed
}

// closeFile closes the append handle if one is open and reports whether it
// did. A failed close is logged: the lines were written already.
func (s *Session) closeFile() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return false
	}
	if err := s.file.Close(); err != nil {
		s.logger.Warn("closing an idle session file failed", "session", s.meta.Key, "err", err)
	}
	s.file = nil
	return true
}
