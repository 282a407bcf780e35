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

// newlyTracked returns the tracked paths HEAD does not hold yet: files
// the caller started tracking (AGENTS.md, prompts/dream.md in an older
// workspace, the scope folders' files when patterns came). Open commits
// them with the extended .gitignore, so the first version on record is the
// one found at that moment, not whatever a later edit left.
func (s *Store) newlyTracked(head headState) ([]string, error) {
	had, err := s.treeFiles(head.treeHash(), nil)
	if err != nil {
		return nil, err
	}
	found, err := s.workingFiles(nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range append(slices.Clone(s.tracked), found...) {
		if _, ok := had[p]; !ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
