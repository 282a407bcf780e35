package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/internal/leftovers"
)

// removeLeftovers deletes the temp files a killed writer left in the
// repository: go-git's loose-object and pack temps (tmp_obj_*, tmp_pack_*
// in objects/pack), the git command line's (tmp_obj_* in the fan-out
// directories) and the Store's own index temps (index.dreamgate-*), once
// they are older than leftovers.MinAge. It returns how many it removed.
// Nothing else is touched.
func (s *Store) removeLeftovers() (int, error) {
	cutoff := time.Now().Add(-leftovers.MinAge)
	removed := 0
	var errs []error
	sweep := func(dir string, prefixes ...string) {
		n, err := leftovers.Sweep(dir, cutoff, func(name string) bool { return hasAnyPrefix(name, prefixes) })
		removed += n
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	sweep(filepath.Join(s.objDir, "pack"), "tmp_obj_", "tmp_pack_", "tmp_idx_")
	fanout, err := os.ReadDir(s.objDir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range fanout {
		if e.IsDir() && len(e.Name()) == 2 {
			sweep(filepath.Join(s.objDir, e.Name()), "tmp_obj_")
		}
	}
	sweep(s.gitDir, "index.dreamgate-")
	if len(errs) > 0 {
		return removed, fmt.Errorf("remove leftover temp files: %w", errors.Join(errs...))
	}
	return removed, nil
}

func hasAnyPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// newlyTracked lists the tracked files in the workspace (and the fixed
// ones) that no line's commit holds yet, sorted.
func (s *Store) newlyTracked() ([]string, error) {
	paths, had, err := s.trackedNow(nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if _, ok := had[p]; ok {
			continue
		}
		if w, err := s.readWorking(p); err == nil && w.exists || slices.Contains(s.tracked, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
