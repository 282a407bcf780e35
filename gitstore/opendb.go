package gitstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage"
)

// OpenDB uses the repository db keeps, or makes one there: HEAD naming
// refs/heads/main and a first commit InitSubject holding a .gitignore and
// the tracked files (Options.Initial's content, else empty). It has no
// workspace: Status is always empty, Checkout writes nothing, Commit and
// CommitPaths are ErrNoWorkspace; a step commits its files with
// CommitChanges, and readers take them from the commits (FileAt). A
// repository whose branch holds every scope (an earlier version's,
// imported) is given its lines, as Open does. Options.AfterWrite reports
// each write's transaction (PointDBWrite, PointDBCommit); Options.Files
// does not apply.
func OpenDB(db DB, opts Options) (*Store, error) {
	s, err := newStore("", opts)
	if err != nil {
		return nil, fmt.Errorf("open memory repository: %w", err)
	}
	b := newDBBackend(db)
	b.hook = s.hook
	b.rolledBack = s.forgetWrite
	s.be = b
	s.initial = opts.Initial
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.openDB(); err != nil {
		return nil, fmt.Errorf("open the memory repository in the database: %w", err)
	}
	return s, nil
}

func (s *Store) openDB() error {
	if _, err := s.be.ref(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.ReferenceName(defaultHead))
		if err := s.be.setRefs([]refUpdate{{name: plumbing.HEAD, new: head}}); err != nil &&
			!errors.Is(err, storage.ErrReferenceHasChanged) {
			return fmt.Errorf("set HEAD: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	h, err := s.head()
	if err != nil {
		return err
	}
	if h.commit == nil {
		if err := s.initialDBCommit(); err != nil {
			return fmt.Errorf("initial commit: %w", err)
		}
	}
	if err := s.splitLines(); err != nil {
		return fmt.Errorf("give each scope a line of history: %w", err)
	}
	return nil
}

// initialDBCommit makes a new repository's first commit: .gitignore and
// the tracked files.
func (s *Store) initialDBCommit() error {
	return s.be.write(func() error {
		x, err := s.commits()
		if err != nil {
			return err
		}
		if len(x.entries) > 0 {
			return nil // another process made it meanwhile
		}
		ignore, _ := s.mergedIgnore(nil)
		edits := map[string]workFile{ignoreFile: fileOfData(ignore)}
		for _, p := range s.tracked {
			edits[p] = fileOfData(s.initial[p])
		}
		for _, p := range slices.Sorted(maps.Keys(s.initial)) {
			if s.tracks(p) {
				edits[p] = fileOfData(s.initial[p])
			}
		}
		msg, err := message(InitSubject, "")
		if err != nil {
			return err
		}
		_, err = s.commitEdits(edits, msg)
		return err
	})
}

// forgetWrite drops what the Store knows of the repository beyond its
// objects (the commit index in memory and the stamps it was checked at):
// a write that rolled back may have added to it. The next use reads the
// index the database holds.
func (s *Store) forgetWrite() {
	s.idx, s.refStamp, s.verified = nil, "", ""
}

// fileOfData is a regular file holding data, as a commit records it.
func fileOfData(data []byte) workFile {
	if data == nil {
		data = []byte{}
	}
	return workFile{blobState: blobState{exists: true, mode: filemode.Regular,
		hash: plumbing.ComputeHash(plumbing.BlobObject, data)}, data: data}
}

// committedIgnore is the .gitignore the commit tree root holds, with the
// lines the store needs appended.
func (s *Store) committedIgnore(root plumbing.Hash) (workFile, error) {
	b, err := s.lookup(root, ignoreFile)
	if err != nil {
		return workFile{}, err
	}
	var old []byte
	if b.exists {
		if old, err = s.readBlob(b.hash); err != nil {
			return workFile{}, err
		}
	}
	data, _ := s.mergedIgnore(old)
	return fileOfData(data), nil
}
