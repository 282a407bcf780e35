package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// Reference writes. go-git's filesystem storage rewrites a loose ref in
// place: it truncates the file, then writes the new id (go-git issue 2399).
// A process killed between the two leaves the branch empty, and go-git then
// reads the branch as unborn. Every reference write of the Store goes
// through refStorer instead, which writes as git does: the new value into
// <ref>.lock (created exclusively, so it is also the ref's lock), synced,
// then renamed over the ref. A reader, a kill or a crash sees the old value
// or the new one, never a torn ref.

// Kill points: the writes Options.AfterWrite reports, by name.
const (
	// PointRefLock: the new value of a ref is in <ref>.lock, synced; the
	// ref itself still holds the old one.
	PointRefLock = "gitstore-ref-lock"
	// PointRef: the ref has its new value (the lock file was renamed over
	// it); the index and the commit index are not updated yet, and
	// index.lock is still held.
	PointRef = "gitstore-ref"
)

// refStorer is go-git's filesystem storage with SetReference and
// CheckAndSetReference replaced by the atomic write. Everything else,
// packed-refs included, is go-git's: a write replaces the loose ref, which
// takes precedence over a packed one, as with git.
type refStorer struct {
	*filesystem.Storage
	s *Store
}

func (r *refStorer) SetReference(ref *plumbing.Reference) error {
	return r.s.setRef(ref, nil)
}

func (r *refStorer) CheckAndSetReference(ref, old *plumbing.Reference) error {
	return r.s.setRef(ref, old)
}

// refPath is the file of a loose ref. HEAD and the other per-worktree refs
// live in the git directory; branches and tags in the common directory (the
// same one, except for a linked worktree).
func (s *Store) refPath(name plumbing.ReferenceName) string {
	n := string(name)
	dir := s.commonDir
	if !strings.HasPrefix(n, "refs/") || strings.HasPrefix(n, "refs/worktree/") ||
		strings.HasPrefix(n, "refs/bisect/") || strings.HasPrefix(n, "refs/rewritten/") {
		dir = s.gitDir
	}
	return filepath.Join(dir, filepath.FromSlash(n))
}

func checkRefName(name plumbing.ReferenceName) error {
	n := string(name)
	if !name.IsSafe() || strings.HasSuffix(n, ".lock") ||
		strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("invalid reference name %q", n)
	}
	return nil
}

// setRef moves name to ref's value. With old, only when the ref still has
// old's id (storage.ErrReferenceHasChanged otherwise): the compare and the
// write happen under the ref's lock file, so no other writer (git's or
// ours) slips in between.
func (s *Store) setRef(ref, old *plumbing.Reference) error {
	name := ref.Name()
	if err := checkRefName(name); err != nil {
		return err
	}
	var content string
	switch ref.Type() {
	case plumbing.HashReference:
		content = ref.Hash().String() + "\n"
	case plumbing.SymbolicReference:
		content = "ref: " + ref.Target().String() + "\n"
	default:
		return fmt.Errorf("set %s: invalid reference", name)
	}
	l, err := s.lockRef(name)
	if err != nil {
		return err
	}
	defer l.release()
	if old != nil {
		cur, err := s.readRef(name)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return storage.ErrReferenceHasChanged
		}
		if err != nil {
			return err
		}
		if cur.Hash() != old.Hash() {
			return storage.ErrReferenceHasChanged
		}
	}
	return l.commit(content)
}

// readRef reads a ref as git does: its loose file when there is one, else
// packed-refs. A loose file without a valid value is a *refDamage: go-git
// would fall back to packed-refs (an older value, or none: an unborn
// branch) and so silently move the branch back.
func (s *Store) readRef(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	b, err := os.ReadFile(s.refPath(name))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return s.packedRef(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return parseRef(name, b)
}

// parseRef parses the content of a loose ref: an id, or "ref: <target>".
func parseRef(name plumbing.ReferenceName, b []byte) (*plumbing.Reference, error) {
	line := strings.TrimRight(string(b), " \t\r\n")
	if target, ok := strings.CutPrefix(line, "ref: "); ok {
		t := plumbing.ReferenceName(strings.TrimSpace(target))
		// git takes a HEAD naming anything but a branch for a broken one.
		if checkRefName(t) == nil && (name != plumbing.HEAD || t.IsBranch()) {
			return plumbing.NewSymbolicReference(name, t), nil
		}
	}
	if h, ok := parseHash(line); ok {
		return plumbing.NewHashReference(name, h), nil
	}
	if len(b) == 0 {
		return nil, &refDamage{name: name, problem: "is empty"}
	}
	return nil, &refDamage{name: name, problem: fmt.Sprintf("holds %q, which is not a commit id", cut(line, 48))}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// packedRef looks name up in packed-refs (plumbing.ErrReferenceNotFound when
// it is not there).
func (s *Store) packedRef(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	b, err := os.ReadFile(filepath.Join(s.commonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, plumbing.ErrReferenceNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		id, n, ok := strings.Cut(strings.TrimRight(line, "\r"), " ")
		if !ok || n != string(name) {
			continue
		}
		if h, ok := parseHash(id); ok {
			return plumbing.NewHashReference(name, h), nil
		}
	}
	return nil, plumbing.ErrReferenceNotFound
}

// refDamage: a ref that holds no usable value (empty, torn, or naming a
// commit the repository does not have), or a branch that is missing while
// the repository holds commits.
type refDamage struct {
	name    plumbing.ReferenceName
	problem string // "is empty", "names 1a2b3c4d, which is no commit of the repository", …
	// unreadable: HEAD itself holds no value (rather than naming a commit
	// the repository lacks).
	unreadable bool
}

func (d *refDamage) Error() string { return string(d.name) + " " + d.problem }

// refLock is a held <ref>.lock, open for writing the ref's new value.
type refLock struct {
	s            *Store
	f            *os.File
	path, target string
	done         bool
}

func (s *Store) lockRef(name plumbing.ReferenceName) (*refLock, error) {
	target := s.refPath(name)
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	f, err := s.takeLock(target + ".lock")
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return &refLock{s: s, f: f, path: f.Name(), target: target}, nil
}

// commit writes content as the ref's new value and renames the lock file
// over the ref, which releases the lock.
func (l *refLock) commit(content string) error {
	if err := l.prepare(content); err != nil {
		return err
	}
	l.s.hook(PointRefLock)
	if err := l.install(); err != nil {
		return err
	}
	l.s.hook(PointRef)
	return nil
}

// prepare writes content into the lock file, synced: the ref's new value,
// not yet in place.
func (l *refLock) prepare(content string) error {
	_, err := l.f.WriteString(content)
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(l.path), err)
	}
	return nil
}

// install renames the prepared lock file over the ref.
//
// No sync of the directory, as git does not sync it either: a crash
// before the rename reaches the disk leaves the old value, which is
// whole. The lock file's sync is what matters: without it a crash can
// leave the rename on disk and the content not, an empty ref.
func (l *refLock) install() error {
	if err := os.Rename(l.path, l.target); err != nil {
		return fmt.Errorf("install %s: %w", filepath.Base(l.target), err)
	}
	l.done = true
	return nil
}

// release gives the lock up without changing the ref, unless commit did.
func (l *refLock) release() {
	if l.f != nil {
		_ = l.f.Close()
	}
	if !l.done {
		_ = os.Remove(l.path)
	}
}

// takeLock creates the lock file p exclusively, as git does. It waits up to
// s.lockWait for another holder to let go, and takes a lock older than
// lockStale for a crash leftover: our writes hold one for milliseconds.
func (s *Store) takeLock(p string) (*os.File, error) {
	deadline := time.Now().Add(s.lockWait)
	for try := 0; ; try++ {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > lockStale {
			s.log.Warn("memory repository: removing a stale lock file", "lock", filepath.Base(p),
				"age", time.Since(fi.ModTime()).Round(time.Second))
			_ = os.Remove(p)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (%s exists)", ErrLocked, p)
		}
		// Polling is how git waits for a lock too: there is nothing to
		// subscribe to.
		time.Sleep(backoff.Delay(try, 5*time.Millisecond, 100*time.Millisecond))
	}
}

// hook reports a finished write to Options.AfterWrite.
func (s *Store) hook(point string) {
	if s.afterWrite != nil {
		s.afterWrite(point)
	}
}
