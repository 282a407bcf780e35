package channels

import (
	"sync"
	"time"
)

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

// TTLCache is a bounded map whose entries expire. Adapters keep in it what
// the platform said about a conversation (is it private? shared?) for a
// while: asking on every message costs a round trip and rate limit, and
// keeping it forever would miss a channel made private. When full it drops
// the expired entries, then arbitrary ones. It is safe for concurrent use.
type TTLCache[V any] struct {
	mu  sync.Mutex
	max int
	now func() time.Time
	m   map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

// NewTTLCache returns a cache of at most max entries; now is the clock
// (time.Now when nil).
func NewTTLCache[V any](max int, now func() time.Time) *TTLCache[V] {
	if now == nil {
		now = time.Now
	}
	return &TTLCache[V]{max: max, now: now, m: make(map[string]ttlEntry[V])}
}

// Get returns key's value while it has not expired.
func (c *TTLCache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v under key for ttl.
func (c *TTLCache[V]) Put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		// Still full: make room for an eighth more at once, so a busy
		// cache does not scan on every insert.
		for k := range c.m {
			if len(c.m) < c.max-c.max/8 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

// Delete forgets key.
func (c *TTLCache[V]) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Len is the number of entries held, expired ones included.
func (c *TTLCache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
