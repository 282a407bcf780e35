package store

import (
	"sync"
	"time"
)

// Posts record the parts of answers posted to a chat platform, each by its
// idempotency key (channels.PostKey: the answered message's id and the
// part's number), so an answer sent again — by a restart, or by the
// process that took a conversation over from one that died — skips what
// went out. The platform's own guard (Discord's nonce, Slack's message
// metadata) covers the moment between a post and its record.
type Posts interface {
	// Posted reports whether a post was recorded under key.
	Posted(key string) (bool, error)
	// Record notes that the post under key went out as the platform's
	// message id ("" when unknown); recording a key again changes
	// nothing.
	Record(key, messageID string) error
}

// KeepPosts is how long a post is remembered: longer than a restart
// answers what a crash left (a day).
const KeepPosts = 48 * time.Hour

// MemoryPosts is the embedded engine's Posts: this process's memory, for
// one process whose restart relies on the platform's guard. The zero
// value is ready.
type MemoryPosts struct {
	mu sync.Mutex
	at map[string]time.Time
}

var _ Posts = (*MemoryPosts)(nil)

// Posted implements Posts.
func (m *MemoryPosts) Posted(key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.at[key]
	return ok, nil
}

// Record implements Posts; posts older than KeepPosts are dropped
// meanwhile, a pass per thousand records.
func (m *MemoryPosts) Record(key, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at = map[string]time.Time{}
	}
	if _, ok := m.at[key]; ok {
		return nil
	}
	now := time.Now()
	if len(m.at)%1000 == 999 {
		for k, at := range m.at {
			if now.Sub(at) > KeepPosts {
				delete(m.at, k)
			}
		}
	}
	m.at[key] = now
	return nil
}
