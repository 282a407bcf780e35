package dream

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fileSnap is one memory file as it was before phase 2.
type fileSnap struct {
	rel    string
	exists bool
	data   []byte
	mode   fs.FileMode
	link   bool // a symbolic link: phase 2 cannot edit it, so it is left alone
}

// snapshot records the memory files before phase 2 so that a failed run can
// put them back: a batch that did not complete is read again next time, and
// half of its edits must not be on disk (or committed as someone's "manual"
// change) when it is.
func snapshot(workspace string) ([]fileSnap, error) {
	snaps := make([]fileSnap, 0, len(memoryFiles))
	for _, rel := range memoryFiles {
		p := filepath.Join(workspace, filepath.FromSlash(rel))
		s := fileSnap{rel: rel}
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("snapshot %s: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0, !fi.Mode().IsRegular():
			s.link = true
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("snapshot %s: %w", rel, err)
			}
			s.exists, s.data, s.mode = true, b, fi.Mode().Perm()
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}

// putBack restores every file that differs from its snapshot and returns the
// ones it rewrote. It goes on after an error so that as much as possible is
// restored, and returns the first error.
func putBack(workspace string, snaps []fileSnap) (restored []string, err error) {
	for _, s := range snaps {
		if s.link {
			continue
		}
		p := filepath.Join(workspace, filepath.FromSlash(s.rel))
		cur, rerr := os.ReadFile(p)
		missing := errors.Is(rerr, fs.ErrNotExist)
		if rerr != nil && !missing {
			err = errors.Join(err, fmt.Errorf("restore %s: %w", s.rel, rerr))
			continue
		}
		var werr error
		switch {
		case !s.exists && missing:
			continue
		case !s.exists:
			werr = os.Remove(p)
		case !missing && bytes.Equal(cur, s.data):
			continue
		default:
			werr = writeAtomic(p, s.data, s.mode)
		}
		if werr != nil {
			err = errors.Join(err, fmt.Errorf("restore %s: %w", s.rel, werr))
			continue
		}
		restored = append(restored, s.rel)
	}
	return restored, err
}
