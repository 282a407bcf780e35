package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Export writes the repository into dir as a workspace of its own, as
// git would leave it: a repository holding every object and ref (so every
// scope's history, the same commits with the same messages, files and
// order), and the files each line's newest commit holds written into the
// folder, with .gitignore and the git index for HEAD's. It is how a
// repository kept in a database goes back to files (dreamgate export);
// `git fsck --full` finds it whole and `git status` clean. dir must hold
// no repository yet (ErrExists); its other files are left alone, tracked
// ones overwritten. opts are the tracked files, as Open takes them; the
// returned Store is the workspace's.
func (s *Store) Export(dir string, opts Options) (*Store, error) {
	defer s.lock()()
	dst, err := initEmpty(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("export the memory repository to %s: %w", dir, err)
	}
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if _, err := copyObjects(dst, s); err != nil {
		return nil, fmt.Errorf("export the memory repository's objects: %w", err)
	}
	if _, _, err := copyRefs(dst, s); err != nil {
		return nil, fmt.Errorf("export the memory repository's refs: %w", err)
	}
	if err := dst.writeHeads(s); err != nil {
		return nil, fmt.Errorf("export the memory files: %w", err)
	}
	return dst, nil
}

// ErrExists: the folder to export into holds a repository already.
var ErrExists = errors.New("the folder holds a git repository already")

// initEmpty makes an empty repository at dir (HEAD naming
// refs/heads/main, no commit) and a Store on it, without Open's first
// commit.
func initEmpty(dir string, opts Options) (*Store, error) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil, ErrExists
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s, err := newStore(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	repo, err := git.PlainInitWithOptions(s.dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.ReferenceName(defaultHead)},
	})
	if err != nil {
		return nil, fmt.Errorf("init repository: %w", err)
	}
	dotGit := filepath.Join(s.dir, ".git")
	s.gitDir, s.commonDir, s.objDir = dotGit, dotGit, filepath.Join(dotGit, "objects")
	if s.repo, err = s.withRefStorer(repo); err != nil {
		return nil, err
	}
	return s, nil
}

// writeHeads writes into s's workspace the files of src's newest commit
// of each line and .gitignore as HEAD holds it, and sets the git index to
// HEAD's files. The caller holds both stores' mutexes.
func (s *Store) writeHeads(src *Store) error {
	x, err := src.commits()
	if err != nil {
		return err
	}
	lines, err := src.linesFor(x, nil)
	if err != nil {
		return err
	}
	files, err := src.filesAt(x, len(x.entries)-1, lines, nil)
	if err != nil {
		return err
	}
	if st, err := src.lineNow("", x); err == nil && st.commit != nil {
		if b, err := src.lookup(st.commit.TreeHash, ignoreFile); err == nil && b.exists {
			files[ignoreFile] = b
		}
	}
	written := map[string]workFile{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		v := files[p]
		if v.mode == filemode.Symlink {
			continue // never written into a workspace
		}
		data, err := src.readBlob(v.hash)
		if err != nil {
			return err
		}
		if err := s.files.WriteFile(p, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if s.lineOf(p) == "" {
			if written[p], err = s.readWorking(p); err != nil {
				return err
			}
		}
	}
	return s.writeIndex(written)
}
