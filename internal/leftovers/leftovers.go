// Package leftovers removes the temp files that a killed writer left in a
// directory: the one sweep shared by the session store and the memory
// repository, which differ only in which names are temps.
//
// It is a leaf: it imports nothing of ours, so any layer may use it
// (gitstore, which may import nothing of ours, included).
package leftovers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// MinAge is how old a temp file must be to count as left behind: a writer
// holds one for milliseconds, so a younger one may belong to another
// process writing now (a `dreamgate chat` or a CLI Dream beside the
// gateway).
const MinAge = time.Minute

// Sweep removes the regular files directly in dir whose name isTemp
// accepts and which were last modified before cutoff, and returns how many
// it removed. Nothing else is touched; a file that is gone by the time it
// is looked at or removed was finished by its writer and is no error.
//
// The error is os.ReadDir's when dir cannot be listed (fs.ErrNotExist when
// it is missing), or else the failed removals joined.
func Sweep(dir string, cutoff time.Time, isTemp func(name string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue // gone meanwhile, or young enough to be in use
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
