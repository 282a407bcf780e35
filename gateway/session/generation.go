package session

import (
	"encoding/json"
	"os"
)

// SaveID makes the session's ID survive a restart. A session's metadata
// (its ID among it) is first written by its first SetLastConsolidated, so
// until then a restart gives the same messages a new ID. History entries
// name the ID of the session generation they archive (a restart that finds
// the range already archived moves last_consolidated instead of archiving
// it twice), so the archiver calls SaveID before its first entry. It writes
// the metadata only when the file on disk does not already hold this ID.
func (s *Session) SaveID() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if raw, err := os.ReadFile(s.prefix + ".meta.json"); err == nil {
		var onDisk struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &onDisk) == nil && onDisk.ID == s.meta.ID {
			return nil
		}
	}
	return s.writeMetaLocked()
}
