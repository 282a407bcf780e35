package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// RunNonces runs the one-time values' contract against an engine: each
// is used once until it expires.
func RunNonces(t *testing.T, open func(t *testing.T) store.Nonces) {
	n := open(t)
	now := time.Now()
	if used, err := n.Used("a", now); err != nil || used {
		t.Fatalf("Used of a new nonce: %v %v", used, err)
	}
	if first, err := n.Use("a", now.Add(time.Hour)); err != nil || !first {
		t.Fatalf("the first Use: %v %v", first, err)
	}
	if first, err := n.Use("a", now.Add(time.Hour)); err != nil || first {
		t.Fatalf("a second Use: %v %v", first, err)
	}
	if used, _ := n.Used("a", now); !used {
		t.Fatal("a used nonce is not Used")
	}
	if used, _ := n.Used("a", now.Add(2*time.Hour)); used {
		t.Fatal("a nonce is Used past its expiry")
	}
	// Many at once: each once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := 0
	for range 8 {
		wg.Go(func() {
			if first, err := n.Use("b", now.Add(time.Hour)); err == nil && first {
				mu.Lock()
				firsts++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firsts != 1 {
		t.Fatalf("%d of 8 concurrent uses were first", firsts)
	}
}

// RunSecrets runs the secrets' contract against an engine, and reopen
// (another process) sees the same secret.
func RunSecrets(t *testing.T, open func(t *testing.T) (s store.Secrets, reopen func(t *testing.T) store.Secrets)) {
	s, reopen := open(t)
	if _, ok, err := s.Lookup("k"); ok || err != nil {
		t.Fatalf("Lookup of a new secret: %v %v", ok, err)
	}
	made := 0
	mk := func() ([]byte, error) { made++; return []byte("0123456789abcdef0123456789abcdef"), nil }
	v, err := s.Secret("k", mk)
	if err != nil || string(v) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("Secret = %q %v", v, err)
	}
	other := func() ([]byte, error) { return []byte("another"), nil }
	if v2, err := reopen(t).Secret("k", other); err != nil || string(v2) != string(v) {
		t.Fatalf("another process's Secret = %q %v, want the kept one", v2, err)
	}
	if v3, ok, err := reopen(t).Lookup("k"); err != nil || !ok || string(v3) != string(v) || made != 1 {
		t.Fatalf("Lookup = %q %v %v (made %d times)", v3, ok, err, made)
	}
}
