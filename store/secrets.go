package store

import (
	"sync"
	"time"
)

// Secrets are what the program makes once and every process shares: the
// memory page's signing key. The embedded engine keeps each as a file of
// the state directory (web.key).
type Secrets interface {
	// Secret returns the secret named name, made with make when there is
	// none; callers at the same time all get the one that was kept.
	Secret(name string, make func() ([]byte, error)) ([]byte, error)
	// Lookup returns the secret named name; ok is false when none was
	// made.
	Lookup(name string) (secret []byte, ok bool, err error)
}

// Nonces are one-time values, each usable once until it expires: the
// memory page's sign-in links.
type Nonces interface {
	// Use records nonce as used until expires; first is false when it
	// was used already.
	Use(nonce string, expires time.Time) (first bool, err error)
	// Used reports whether nonce was used and its use has not expired at
	// now.
	Used(nonce string, now time.Time) (bool, error)
}

// MemoryNonces is the embedded engine's Nonces: kept in this process's
// memory and forgotten when it ends (a caller refuses what an earlier
// process may have seen used). The zero value is ready.
type MemoryNonces struct {
	mu    sync.Mutex
	until map[string]time.Time
}

var _ Nonces = (*MemoryNonces)(nil)

// Use implements Nonces; expired nonces are dropped meanwhile.
func (m *MemoryNonces) Use(nonce string, expires time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until = map[string]time.Time{}
	}
	if _, ok := m.until[nonce]; ok {
		return false, nil
	}
	now := time.Now()
	for n, exp := range m.until {
		if !now.Before(exp) {
			delete(m.until, n)
		}
	}
	m.until[nonce] = expires
	return true, nil
}

// Used implements Nonces.
func (m *MemoryNonces) Used(nonce string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.until[nonce]
	return ok && now.Before(exp), nil
}
