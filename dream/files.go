package dream

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"

	"github.com/dreamgate/dreamgate/workspace"
)

// fileSnap is one memory file as it was before phase 2.
type fileSnap struct {
	rel    string
	exists bool
	data   []byte
	mode   fs.FileMode
	link   bool // a symbolic link: phase 2 cannot edit it, so it is left alone
}

// snapshot records the memory files and cold memory before phase 2 so that a failed run can
// put them back: a batch that did not complete is read again next time, and
// half of its edits must not be on disk (or committed as someone's "manual"
// change) when it is. It holds the workspace's write lock, so it never
// records half of a chat edit.
func snapshot(ws *workspace.Root) ([]fileSnap, error) {
	var snaps []fileSnap
	err := ws.Exclusive(func() error {
		snaps = make([]fileSnap, 0, len(upkeepFiles))
		for _, rel := range upkeepFiles {
			s := fileSnap{rel: rel}
			fi, err := ws.Lstat(rel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return fmt.Errorf("snapshot %s: %w", rel, err)
			case fi.Mode()&fs.ModeSymlink != 0, !fi.Mode().IsRegular():
				s.link = true
			default:
				b, err := ws.ReadFile(rel)
				if err != nil {
					return fmt.Errorf("snapshot %s: %w", rel, err)
				}
				s.exists, s.data, s.mode = true, b, fi.Mode().Perm()
			}
			snaps = append(snaps, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snaps, nil
}

// putBack restores every file that differs from its snapshot and returns the
// ones it rewrote. It holds the workspace's write lock, so a chat edit in
// progress is not interleaved with the comparison and the rewrite (one that
// landed since the snapshot is undone with phase 2's edits of that file;
// the lock cannot tell them apart). It goes on after an error so that as
// much as possible is restored, and returns the first error.
func putBack(ws *workspace.Root, snaps []fileSnap) (restored []string, err error) {
	_ = ws.Exclusive(func() error {
		restored, err = putBackLocked(ws, snaps)
		return nil
	})
	return restored, err
}

func putBackLocked(ws *workspace.Root, snaps []fileSnap) (restored []string, err error) {
	for _, s := range snaps {
		if s.link {
			continue
		}
		cur, rerr := ws.ReadFile(s.rel)
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
			werr = ws.Remove(s.rel)
		case !missing && bytes.Equal(cur, s.data):
			continue
		default:
			werr = ws.WriteFile(s.rel, s.data, s.mode)
		}
		if werr != nil {
			err = errors.Join(err, fmt.Errorf("restore %s: %w", s.rel, werr))
			continue
		}
		restored = append(restored, s.rel)
	}
	return restored, err
}
