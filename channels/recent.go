package channels

import "sync"

// RecentSet is a bounded set that forgets its oldest keys first. Adapters
// use it to drop duplicate deliveries (Slack retries, Discord replays) and
// to tell a refused user only once. It is safe for concurrent use.
type RecentSet struct {
	mu   sync.Mutex
	keys map[string]struct{}
	ring []string
	next int
}

// NewRecentSet returns a set that remembers the last capacity keys.
func NewRecentSet(capacity int) *RecentSet {
	return &RecentSet{keys: make(map[string]struct{}, capacity), ring: make([]string, capacity)}
}

// Add records key and reports whether it was new.
func (s *RecentSet) Add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[key]; ok {
		return false
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.keys, old)
	}
	s.ring[s.next] = key
	s.next = (s.next + 1) % len(s.ring)
	s.keys[key] = struct{}{}
	return true
}
