package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/workspace"
)

// leftoverAge is how old a temp file must be to be a leftover: a metadata
// write takes milliseconds, so a younger one may belong to a write running
// now in another process (a `dreamgate chat` beside the gateway).
const leftoverAge = time.Minute

// RemoveLeftovers deletes the temp files of metadata writes that a killed
// process left in the sessions directory (the atomic write's temps, and the
// "<key>.meta.json.tmp*" names of earlier versions), and returns how many it
// removed. Session files themselves are never touched.
func (st *Store) RemoveLeftovers() (int, error) {
	entries, err := os.ReadDir(st.dir)
	if err != nil {
		return 0, fmt.Errorf("list sessions dir: %w", err)
	}
	cutoff := time.Now().Add(-leftoverAge)
	removed := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(workspace.IsTemp(name) || strings.Contains(name, ".meta.json.tmp")) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // its write finished meanwhile
		}
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(st.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("remove leftover temp files: %w", errors.Join(errs...))
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
