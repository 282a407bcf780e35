package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// Unarchived counts, for each current conversation on disk, the messages
// not archived yet, and returns the keys of those that have some. It reads
// the files without taking any conversation's lock and writes nothing: the
// caller only looks (`dreamgate dream run` saying why Dream found nothing
// new), and a running gateway that holds a conversation must never be
// refused its own conversation because another command looked. A
// conversation being written meanwhile is read as far as it got.
func (st *Store) Unarchived() (map[string]int, error) {
	if st.conv != nil {
		return st.unarchivedDB()
	}
	list, err := st.ListOnDisk()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range list {
		n, err := st.unarchived(c.Key)
		if err != nil {
			return out, err
		}
		if n > 0 {
			out[c.Key] = n
		}
	}
	return out, nil
}

func (st *Store) unarchived(key string) (int, error) {
	st.mu.Lock()
	s, ok := st.open[key]
	now := st.now
	st.mu.Unlock()
	if !ok {
		s = &Session{prefix: st.prefix(key), logger: slog.New(slog.DiscardHandler), now: now}
		raw, err := os.ReadFile(s.prefix + ".meta.json")
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, fmt.Errorf("read session %s metadata: %w", key, err)
		default:
			// Unreadable metadata counts every message as unarchived, as
			// a load would.
			_ = json.Unmarshal(raw, &s.meta)
		}
		s.meta.Key = key
		if _, err := s.loadMessages(); err != nil {
			return 0, err
		}
	}
	return max(s.Len()-s.LastConsolidated(), 0), nil
}
