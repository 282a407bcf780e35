package gitstore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// PackThreshold is the estimated number of loose objects above which Pack
// packs them (git's own gc.auto default). A Dream commit adds about four
// objects, so that is one pack every ~1,700 commits.
const PackThreshold = 6700

// packWindow is how many neighbouring objects the pack encoder tries as
// delta bases (git's default).
const packWindow = 10

// Pack moves the loose objects into a new pack file when there are more than
// about PackThreshold of them, and returns how many it packed (0 below the
// threshold, which costs one directory listing). go-git writes every object
// as its own file and never packs: 10,000 commits leave ~40,000 files
// (~160 MB in 4 KiB blocks) where a pack takes ~6 MB. Call it after a commit,
// off any latency-sensitive path: packing ~7,000 objects takes about a
// second.
//
// It is incremental like `git repack -d` without -a: existing packs are
// never rewritten or deleted, and every loose object (reachable or not) is
// packed before its file is removed, so nothing a git user may still need
// (reflogs, the index, dangling work) goes away.
func (s *Store) Pack() (int, error) {
	defer s.lock()()
	if s.bare() || s.estimateLoose() <= s.packThreshold {
		return 0, nil
	}
	n, err := s.pack()
	if err != nil {
		return 0, fmt.Errorf("pack loose objects: %w", err)
	}
	return n, nil
}

// estimateLoose samples one of the 256 loose-object directories, as git's
// `gc --auto` does: object ids are uniformly spread.
func (s *Store) estimateLoose() int {
	names, err := os.ReadDir(filepath.Join(s.objDir, "17"))
	if err != nil {
		return 0
	}
	return len(names) * 256
}

func (s *Store) pack() (int, error) {
	lock, err := s.lockIndex() // one packer at a time, also across processes
	if err != nil {
		return 0, err
	}
	defer lock.release()
	los, ok := s.obj().(storer.LooseObjectStorer)
	if !ok {
		return 0, fmt.Errorf("storage %T has no loose objects", s.obj())
	}
	pfw, ok := s.obj().(storer.PackfileWriter)
	if !ok {
		return 0, fmt.Errorf("storage %T cannot write packs", s.obj())
	}
	var loose []plumbing.Hash
	if err := los.ForEachObjectHash(func(h plumbing.Hash) error {
		loose = append(loose, h)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("list loose objects: %w", err)
	}
	if len(loose) == 0 {
		return 0, nil
	}
	w, err := pfw.PackfileWriter()
	if err != nil {
		return 0, err
	}
	sum, err := packfile.NewEncoder(w, s.obj(), false).Encode(loose, packWindow)
	if err != nil {
		_ = w.Close()
		return 0, fmt.Errorf("encode pack: %w", err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("write pack: %w", err)
	}
	// The loose files go only once the pack is durably on disk.
	base := filepath.Join(s.objDir, "pack", "pack-"+sum.String())
	for _, p := range []string{base + ".pack", base + ".idx", filepath.Dir(base)} {
		if err := syncPath(p); err != nil {
			return 0, fmt.Errorf("sync %s: %w", filepath.Base(p), err)
		}
	}
	for _, h := range loose {
		if err := los.DeleteLooseObject(h); err != nil {
			return 0, fmt.Errorf("remove packed loose object %s: %w", shortID(h.String()), err)
		}
	}
	s.log.Info("memory repository: packed loose objects", "objects", len(loose), "pack", shortID(sum.String()))
	return len(loose), nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
