package gitstore

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// BenchmarkRefWrite compares one move of the branch by go-git's own write
// (in place: truncate, write; a kill between the two empties the branch)
// with the Store's (<ref>.lock, fsync, rename) in one repository; run with
// -count so the two alternate and the machine's load weighs on both alike.
func BenchmarkRefWrite(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ws")
	s, err := Open(dir, Options{Tracked: []string{"USER.md"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.lock()()
	h, err := s.head()
	if err != nil {
		b.Fatal(err)
	}
	name, ids := h.name, [2]plumbing.Hash{h.commit.Hash, h.commit.TreeHash}
	st := s.repo.Storer.(*refStorer)
	for _, way := range []struct {
		name string
		set  func(ref, old *plumbing.Reference) error
	}{
		{"go-git-in-place", st.Storage.CheckAndSetReference},
		{"lock-fsync-rename", st.CheckAndSetReference},
	} {
		b.Run(way.name, func(b *testing.B) {
			old := plumbing.NewHashReference(name, ids[0])
			if err := st.Storage.SetReference(old); err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				ref := plumbing.NewHashReference(name, ids[(i+1)%2])
				if err := way.set(ref, old); err != nil {
					b.Fatal(err)
				}
				old = ref
			}
		})
	}
}
