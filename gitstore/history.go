package gitstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Log lists commits following first parents from HEAD, newest first. With a
// subjectPrefix only commits whose subject starts with it are listed and
// count toward n; n <= 0 lists all. With keep, only commits that changed a
// tracked file keep accepts are listed; nil keep lists every commit. A
// repository without commits gives none.
func (s *Store) Log(n int, subjectPrefix string, keep func(path string) bool) ([]Commit, error) {
	defer s.lock()()
	cs, err := s.matching(n, subjectPrefix, keep)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	out := make([]Commit, 0, len(cs))
	for _, c := range cs {
		out = append(out, toCommit(c))
	}
	return out, nil
}

// LogBefore is Log from the commit before down: the newest n (n <= 0: all)
// commits older than before on the first-parent history that match
// subjectPrefix and keep as in Log, newest first. before is a full id
// (the last commit of the page a reader saw); "" starts at HEAD, as Log
// does. A before that is not on the history is ErrNotInHistory. Like Log,
// it reads the commit index and only the commits it returns, so a page
// deep in a long history costs what the first one does.
func (s *Store) LogBefore(before string, n int, subjectPrefix string, keep func(path string) bool) ([]Commit, error) {
	defer s.lock()()
	var from plumbing.Hash
	if before != "" {
		h, ok := parseHash(strings.ToLower(before))
		if !ok {
			return nil, fmt.Errorf("log before %q: %w: want a full id", before, ErrInvalidRevision)
		}
		from = h
	}
	cs, err := s.matchingBetween(n, subjectPrefix, from, plumbing.ZeroHash, keep)
	if err != nil {
		return nil, fmt.Errorf("log before %s: %w", shortID(before), err)
	}
	out := make([]Commit, 0, len(cs))
	for _, c := range cs {
		out = append(out, toCommit(c))
	}
	return out, nil
}

// matching returns the newest n (n <= 0: all) commits on the first-parent
// history whose subject starts with prefix and that changed a tracked file
// keep accepts (nil: any commit), newest first. It searches the commit
// index and reads the commits it names from the repository; one that is
// not what the index says makes it rebuild the index and search again.
func (s *Store) matching(n int, prefix string, keep func(string) bool) ([]*object.Commit, error) {
	return s.matchingAfter(n, prefix, plumbing.ZeroHash, keep)
}

// matchingAfter is matching among the commits newer than stop (all of
// them when stop is zero or not on the history).
func (s *Store) matchingAfter(n int, prefix string, stop plumbing.Hash, keep func(string) bool) ([]*object.Commit, error) {
	return s.matchingBetween(n, prefix, plumbing.ZeroHash, stop, keep)
}

// matchingBetween is matching among the commits older than from (zero:
// from HEAD on; not on the history: ErrNotInHistory) and newer than stop.
func (s *Store) matchingBetween(n int, prefix string, from, stop plumbing.Hash, keep func(string) bool) ([]*object.Commit, error) {
	out, err := s.search(n, prefix, from, stop, keep)
	if errors.Is(err, errIndexStale) {
		s.forgetIndex(err.Error())
		out, err = s.search(n, prefix, from, stop, keep)
	}
	return out, err
}

func (s *Store) search(n int, prefix string, from, stop plumbing.Hash, keep func(string) bool) ([]*object.Commit, error) {
	return s.searchSubjects(n, func(subject string) bool { return strings.HasPrefix(subject, prefix) }, from, stop, keep)
}

// LogPrefixes is Log of the commits whose subject starts with any of
// prefixes (none: no commit).
func (s *Store) LogPrefixes(n int, prefixes []string, keep func(path string) bool) ([]Commit, error) {
	defer s.lock()()
	match := func(subject string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(subject, p) })
	}
	cs, err := s.searchSubjects(n, match, plumbing.ZeroHash, plumbing.ZeroHash, keep)
	if errors.Is(err, errIndexStale) {
		s.forgetIndex(err.Error())
		cs, err = s.searchSubjects(n, match, plumbing.ZeroHash, plumbing.ZeroHash, keep)
	}
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	out := make([]Commit, 0, len(cs))
	for _, c := range cs {
		out = append(out, toCommit(c))
	}
	return out, nil
}

func (s *Store) searchSubjects(n int, match func(subject string) bool, from, stop plumbing.Hash, keep func(string) bool) ([]*object.Commit, error) {
	x, err := s.commits()
	if err != nil {
		return nil, err
	}
	start := len(x.entries) - 1
	if !from.IsZero() {
		i, ok := x.pos[from]
		if !ok {
			return nil, fmt.Errorf("%s: %w", shortID(from.String()), ErrNotInHistory)
		}
		start = i - 1
	}
	admits := x.admits(keep)
	var out []*object.Commit
	for i := start; i >= 0 && (n <= 0 || len(out) < n) && x.entries[i].id != stop; i-- {
		if e := &x.entries[i]; match(e.subject) && admits(e) {
			c, err := s.indexedCommit(*e)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// errIndexStale: the commit index names a commit the repository does not
// have, or has with another subject or parent.
var errIndexStale = errors.New("commit index does not match the repository")

// indexedCommit reads the commit an index entry names and checks that it is
// that entry.
func (s *Store) indexedCommit(e indexEntry) (*object.Commit, error) {
	c, err := object.GetCommit(s.obj(), e.id)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: no commit %s", errIndexStale, shortID(e.id.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", shortID(e.id.String()), err)
	}
	if got := toCommit(c); got.Subject != e.subject || got.Parent != e.commit().Parent {
		return nil, fmt.Errorf("%w: commit %s differs", errIndexStale, shortID(e.id.String()))
	}
	return c, nil
}

// Show returns the commit named by rev (a full id, or a prefix of at least
// 4 hex digits naming one commit) and its diff against its first parent; a
// root commit is diffed against the empty tree. The diff holds only the
// files keep accepts (nil: every file): a commit that changed none of them
// comes with an empty Diff, and its Body (which may describe the other
// files) is not for whoever keep stands for. Errors wrap
// ErrInvalidRevision, ErrUnknownRevision or ErrAmbiguousRevision.
func (s *Store) Show(rev string, keep func(path string) bool) (Commit, Diff, error) {
	defer s.lock()()
	c, err := s.resolve(rev)
	if err != nil {
		return Commit{}, Diff{}, fmt.Errorf("show: %w", err)
	}
	d, err := s.commitDiff(c, keep)
	if err != nil {
		return Commit{}, Diff{}, fmt.Errorf("show %s: %w", shortID(c.Hash.String()), err)
	}
	return toCommit(c), d, nil
}

// Latest returns the newest commit on the first-parent history whose subject
// starts with subjectPrefix (e.g. "dream:") and that changed a tracked file
// keep accepts (nil: any commit), with its diff against its first parent
// cut to those files, as Show. None: ErrNoMatchingCommit.
func (s *Store) Latest(subjectPrefix string, keep func(path string) bool) (Commit, Diff, error) {
	defer s.lock()()
	found, err := s.matching(1, subjectPrefix, keep)
	if err != nil {
		return Commit{}, Diff{}, fmt.Errorf("latest %q: %w", subjectPrefix, err)
	}
	if len(found) == 0 {
		return Commit{}, Diff{}, fmt.Errorf("latest %q: %w", subjectPrefix, ErrNoMatchingCommit)
	}
	d, err := s.commitDiff(found[0], keep)
	if err != nil {
		return Commit{}, Diff{}, fmt.Errorf("latest %q: %w", subjectPrefix, err)
	}
	return toCommit(found[0]), d, nil
}

const minPrefix = 4

// resolve finds the commit named by a full id or a unique prefix.
func (s *Store) resolve(rev string) (*object.Commit, error) {
	rev = strings.ToLower(strings.TrimSpace(rev))
	if len(rev) < minPrefix || len(rev) > 40 || strings.Trim(rev, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w %q: want %d to 40 hex digits", ErrInvalidRevision, rev, minPrefix)
	}
	var ids []plumbing.Hash
	if len(rev) == 40 {
		ids = []plumbing.Hash{plumbing.NewHash(rev)}
	} else {
		var err error
		if ids, err = s.be.objectIDs(rev); err != nil {
			return nil, fmt.Errorf("resolve %q: %w", rev, err)
		}
	}
	var commits []*object.Commit
	for _, id := range ids {
		c, err := object.GetCommit(s.obj(), id)
		if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, object.ErrUnsupportedObject) ||
			errors.Is(err, plumbing.ErrInvalidType) {
			continue // a blob or tree sharing the prefix is not what anyone means
		}
		if err != nil {
			return nil, fmt.Errorf("resolve %q: read %s: %w", rev, shortID(id.String()), err)
		}
		commits = append(commits, c)
	}
	switch len(commits) {
	case 0:
		return nil, fmt.Errorf("%w %q", ErrUnknownRevision, rev)
	case 1:
		return commits[0], nil
	}
	e := &AmbiguousRevisionError{Prefix: rev}
	for _, c := range commits {
		e.Candidates = append(e.Candidates, c.Hash.String())
	}
	slices.Sort(e.Candidates)
	return nil, e
}

// objectsWithPrefix lists the ids of all objects starting with the hex
// prefix (at least 2 digits) by looking only where such objects can be: the
// loose-object directory named by the first two digits, and the matching
// fan-out range of each pack index. go-git's own lookup lists every loose
// directory, which costs tens of milliseconds in a repository of 10,000
// commits.
func (s *Store) objectsWithPrefix(prefix string) ([]plumbing.Hash, error) {
	dir := filepath.Join(s.objDir, prefix[:2])
	names, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list %s: %w", prefix[:2], err)
	}
	var out []plumbing.Hash
	for _, n := range names {
		name := n.Name()
		if len(name) == 38 && strings.HasPrefix(name, prefix[2:]) {
			if h, ok := parseHash(prefix[:2] + name); ok {
				out = append(out, h)
			}
		}
	}
	idxs, err := filepath.Glob(filepath.Join(s.objDir, "pack", "pack-*.idx"))
	if err != nil {
		return nil, err
	}
	for _, idx := range idxs {
		hs, err := packPrefix(idx, prefix)
		if err != nil {
			return nil, fmt.Errorf("search %s: %w", filepath.Base(idx), err)
		}
		for _, h := range hs {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

func parseHash(s string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(s) != 40 {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, false
	}
	return h, true
}

// packPrefix searches a version-2 pack index: a 256-entry fan-out table of
// cumulative counts by first byte, then the sorted object ids. Only the ids
// whose first byte matches are read.
func packPrefix(path, prefix string) ([]plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return nil, err
	}
	if string(head[:4]) != "\xfftOc" || binary.BigEndian.Uint32(head[4:]) != 2 {
		return nil, errors.New("unsupported pack index version")
	}
	first, err := hex.DecodeString(prefix[:2])
	if err != nil {
		return nil, err
	}
	b := int64(first[0])
	var lo, hi uint32
	var buf [4]byte
	if b > 0 {
		if _, err := f.ReadAt(buf[:], 8+4*(b-1)); err != nil {
			return nil, err
		}
		lo = binary.BigEndian.Uint32(buf[:])
	}
	if _, err := f.ReadAt(buf[:], 8+4*b); err != nil {
		return nil, err
	}
	hi = binary.BigEndian.Uint32(buf[:])
	if hi <= lo {
		return nil, nil
	}
	ids := make([]byte, 20*int64(hi-lo))
	if _, err := f.ReadAt(ids, 8+4*256+20*int64(lo)); err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for i := 0; i < len(ids); i += 20 {
		var h plumbing.Hash
		copy(h[:], ids[i:i+20])
		if strings.HasPrefix(h.String(), prefix) {
			out = append(out, h)
		}
	}
	return out, nil
}
