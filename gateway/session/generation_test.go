package session

import (
	"os"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// A session that has messages but was never archived has no metadata yet:
// its ID lives in memory only until SaveID writes it.
func TestSaveIDKeepsTheIDAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, _ := st.Get("k")
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "one"}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := s.SaveID(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, _ := st2.Get("k")
	if s2.ID() != id || s2.Len() != 1 || s2.LastConsolidated() != 0 {
		t.Errorf("after a restart: id %q (want %q), len %d, lc %d", s2.ID(), id, s2.Len(), s2.LastConsolidated())
	}

	// Already on disk: SaveID does not write again (the atomic write would
	// replace the file, a new inode).
	before, err := os.Stat(s2.prefix + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.SaveID(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(s2.prefix + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("SaveID rewrote metadata that already held the ID")
	}

	// Metadata that does not hold this ID (unreadable, so the session
	// started over under a new one) is replaced.
	os.WriteFile(s2.prefix+".meta.json", []byte("{not json"), 0o600)
	st2.Close()
	st3, _ := NewStore(dir, nil)
	s3, _ := st3.Get("k")
	if err := s3.SaveID(); err != nil {
		t.Fatal(err)
	}
	st3.Close()
	st4, _ := NewStore(dir, nil)
	if s4, _ := st4.Get("k"); s4.ID() != s3.ID() {
		t.Errorf("id after replacing unreadable metadata = %q, want %q", s4.ID(), s3.ID())
	}
}
