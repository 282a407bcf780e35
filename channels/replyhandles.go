package channels

import (
	"sync"
	"time"
)

// ReplyHandles keep the platforms' handles for answering a command a
// person ran — a Slack slash command's response_url, a Discord
// interaction's token — from its acceptance until the handle expires, so
// the answer goes through the handle whichever process sends it, also
// after a restart: a slash command accepted before a restart is answered
// after it where it was typed, as a message is. cmd passes the store's
// (a file in the state directory, or the database's rows); an adapter
// given none keeps them in its memory (MemoryReplyHandles). A handle is
// the adapter's own record; its uses are counted by the store, once for
// every process.
type ReplyHandles interface {
	// Keep keeps handle under key until expires.
	Keep(key string, handle []byte, expires time.Time) error
	// Handle returns the handle kept under key and how often it was
	// used; ok is false when none is kept, or it expired by now.
	Handle(key string, now time.Time) (handle []byte, uses int, ok bool, err error)
	// Use books one use of the handle under key when it was used fewer
	// than limit times and has not expired by now; ok says it did.
	Use(key string, limit int, now time.Time) (ok bool, err error)
}

// MemoryReplyHandles are ReplyHandles kept in this process's memory: an
// adapter's when cmd gives it none (tests), and the fallback for a handle
// the store could not keep. The zero value is ready.
type MemoryReplyHandles struct {
	mu sync.Mutex
	m  map[string]*memoryHandle
}

type memoryHandle struct {
	handle  []byte
	expires time.Time
	uses    int
}

var _ ReplyHandles = (*MemoryReplyHandles)(nil)

// Keep implements ReplyHandles; expired handles are dropped meanwhile.
func (m *MemoryReplyHandles) Keep(key string, handle []byte, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]*memoryHandle{}
	}
	now := time.Now()
	for k, h := range m.m {
		if !now.Before(h.expires) {
			delete(m.m, k)
		}
	}
	m.m[key] = &memoryHandle{handle: append([]byte(nil), handle...), expires: expires}
	return nil
}

// Handle implements ReplyHandles.
func (m *MemoryReplyHandles) Handle(key string, now time.Time) ([]byte, int, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.m[key]
	if !ok || !now.Before(h.expires) {
		return nil, 0, false, nil
	}
	return append([]byte(nil), h.handle...), h.uses, true, nil
}

// Use implements ReplyHandles.
func (m *MemoryReplyHandles) Use(key string, limit int, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.m[key]
	if !ok || !now.Before(h.expires) || h.uses >= limit {
		return false, nil
	}
	h.uses++
	return true, nil
}
