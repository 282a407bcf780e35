package history

import (
	"fmt"
	"strconv"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

var _ store.ArchiveImporter = (*Store)(nil)

// Import implements store.ArchiveImporter: the entries above the last
// cursor are appended as they are (cursors kept), in one write, fsynced,
// then memory/.cursor follows. A scope an entry may not name stops the
// import before anything is written.
func (s *Store) Import(entries []Entry) (int, error) {
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := s.refreshLocked(); err != nil {
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	top := max(counter, s.cache.maxCursor)
	var buf []byte
	added := 0
	for _, e := range entries {
		if e.Cursor <= top {
			continue
		}
		if err := store.CheckScope(e.Scope); err != nil {
			return 0, fmt.Errorf("import history entry %d: %w", e.Cursor, err)
		}
		top = e.Cursor
		buf = append(appendEntryJSON(buf, e), '\n')
		added++
	}
	if added == 0 {
		return 0, nil
	}
	f, size, created, err := s.openAppendLocked()
	if err != nil {
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(buf); err != nil {
		_ = f.Truncate(size)
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(size)
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	if created {
		if err := workspace.SyncDir(s.dir); err != nil {
			return 0, err
		}
	}
	s.cache = cache{}
	if err := workspace.WriteFile(s.cursorPath, []byte(strconv.Itoa(top)), fileMode); err != nil {
		return 0, fmt.Errorf("import history entries: %w", err)
	}
	return added, nil
}

// RaiseLastCursor implements store.ArchiveImporter: memory/.cursor is
// raised to n when it is lower.
func (s *Store) RaiseLastCursor(n int) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.refreshLocked(); err != nil {
		return err
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return err
	}
	if n <= max(counter, s.cache.maxCursor) {
		return nil
	}
	if err := workspace.WriteFile(s.cursorPath, []byte(strconv.Itoa(n)), fileMode); err != nil {
		return fmt.Errorf("raise the history cursor: %w", err)
	}
	return nil
}
