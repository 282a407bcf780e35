package gitstore

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The commit index lists the first-parent history of HEAD, one line per
// commit: id, first parent, author time, which tracked files the commit
// changed, subject. Latest and Log search it instead of reading every commit
// object, and Restore finds the commits a restore undoes in it instead of
// reading every tree since the target (at 10,000 commits that was 0.3 s and
// 0.8 s).
//
// It is a cache and never the authority. It lives in <gitdir>/indexFile;
// it is checked against HEAD before every use and caught up by walking back
// from HEAD to the newest commit it knows (someone committed with the git
// command line), or rebuilt by walking the whole history when it does not
// know any (missing, corrupt, a reset, another tracked list). Each line
// carries a checksum and the lines must form a parent chain, so a torn
// append or a damaged file is rebuilt, not believed. The commits it answers
// with are read from the repository and checked before they are returned.
const (
	indexFile   = "dreamgate-commits"
	indexHeader = "dreamgate commit index v1 tracked="
)

// indexEntry is one commit of the first-parent history.
type indexEntry struct {
	id, parent plumbing.Hash // parent: zero for a root commit
	when       int64         // author time, Unix seconds
	offset     int           // author time zone, seconds east of UTC
	changed    bitset        // the tracked files (by position) the commit changed against its first parent
	subject    string
}

// bitset is a set of small integers: bit i%8 of byte i/8.
type bitset []byte

func (b bitset) has(i int) bool { return i/8 < len(b) && b[i/8]&(1<<(i%8)) != 0 }

func (b *bitset) set(i int) {
	for len(*b) <= i/8 {
		*b = append(*b, 0)
	}
	(*b)[i/8] |= 1 << (i % 8)
}

// meets reports whether a and b share an element.
func (b bitset) meets(o bitset) bool {
	for i := range min(len(b), len(o)) {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// commitIndex is the loaded index: the first-parent chain, oldest first.
type commitIndex struct {
	entries []indexEntry
	pos     map[plumbing.Hash]int
	size    int64 // bytes of the file as we last wrote or read it; -1: not on disk
}

func (x *commitIndex) head() plumbing.Hash {
	if len(x.entries) == 0 {
		return plumbing.ZeroHash
	}
	return x.entries[len(x.entries)-1].id
}

// find is the position of the commit id; a nil index has none.
func (x *commitIndex) find(id plumbing.Hash) (int, bool) {
	if x == nil {
		return 0, false
	}
	i, ok := x.pos[id]
	return i, ok
}

func (x *commitIndex) add(e indexEntry) {
	x.pos[e.id] = len(x.entries)
	x.entries = append(x.entries, e)
}

func (e indexEntry) commit() Commit {
	id := e.id.String()
	c := Commit{
		SHA:     id,
		Short:   shortID(id),
		Subject: e.subject,
		When:    time.Unix(e.when, 0).In(time.FixedZone("", e.offset)),
	}
	if !e.parent.IsZero() {
		c.Parent = e.parent.String()
	}
	return c
}

// trackedBits is the set of the tracked files among paths.
func (s *Store) trackedBits(paths func(string) bool) bitset {
	var bits bitset
	for i, p := range s.tracked {
		if paths(p) {
			bits.set(i)
		}
	}
	return bits
}

// admits returns whether an index entry changed a tracked file keep
// accepts; every entry when keep is nil.
func (s *Store) admits(keep func(string) bool) func(*indexEntry) bool {
	if keep == nil {
		return func(*indexEntry) bool { return true }
	}
	want := s.trackedBits(keep)
	return func(e *indexEntry) bool { return e.changed.meets(want) }
}

// commits returns the index caught up with HEAD. A repository without
// commits has an empty index. Writing the file is best effort: a failure is
// logged and the index in memory is used anyway.
func (s *Store) commits() (*commitIndex, error) {
	head, err := s.head()
	if err != nil {
		return nil, err
	}
	if head.commit == nil {
		return &commitIndex{pos: map[plumbing.Hash]int{}, size: -1}, nil
	}
	if s.idx == nil {
		s.idx = s.loadIndexFile()
	}
	if s.idx != nil && s.idx.head() == head.commit.Hash {
		return s.idx, nil
	}
	x, err := s.walkIndex(head.commit, s.idx)
	if err != nil {
		return nil, err
	}
	s.idx = x
	return x, nil
}

// walkIndex returns the index of the history from head: the commits back
// from head up to the newest one known has (keeping known's entries up to
// that one), or the whole history when known is nil or has none. The file
// is appended to when all of known's entries stay, rewritten otherwise.
func (s *Store) walkIndex(head *object.Commit, known *commitIndex) (*commitIndex, error) {
	var fresh []indexEntry
	keep := -1
	state, err := s.trackedState(head.TreeHash)
	if err != nil {
		return nil, err
	}
	for c := head; c != nil; {
		if p, ok := known.find(c.Hash); ok {
			keep = p
			break
		}
		var e indexEntry
		if e, c, state, err = s.indexStep(c, state); err != nil {
			return nil, err
		}
		fresh = append(fresh, e)
	}
	slices.Reverse(fresh)
	if known != nil && keep == len(known.entries)-1 {
		// HEAD moved on from what known ends with: the usual case.
		for _, e := range fresh {
			known.add(e)
		}
		s.appendIndexFile(known, fresh)
		return known, nil
	}
	x := &commitIndex{pos: map[plumbing.Hash]int{}, size: -1}
	if keep >= 0 {
		for _, e := range known.entries[:keep+1] {
			x.add(e)
		}
	}
	for _, e := range fresh {
		x.add(e)
	}
	s.saveIndexFile(x)
	return x, nil
}

// indexStep makes the entry of c, whose tracked files are in state, and
// returns c's first parent (nil for a root commit) with its state.
func (s *Store) indexStep(c *object.Commit, state []blobState) (indexEntry, *object.Commit, []blobState, error) {
	e := indexEntry{id: c.Hash, when: c.Author.When.Unix(), subject: toCommit(c).Subject}
	_, e.offset = c.Author.When.Zone()
	parentState := make([]blobState, len(s.tracked)) // a root commit's parent: nothing
	var parent *object.Commit
	if len(c.ParentHashes) > 0 {
		e.parent = c.ParentHashes[0]
		var err error
		if parent, err = object.GetCommit(s.repo.Storer, e.parent); err != nil {
			return e, nil, nil, fmt.Errorf("read commit %s: %w", shortID(e.parent.String()), err)
		}
		parentState = state
		if parent.TreeHash != c.TreeHash {
			if parentState, err = s.trackedState(parent.TreeHash); err != nil {
				return e, nil, nil, err
			}
		}
	}
	for i := range s.tracked {
		if state[i] != parentState[i] {
			e.changed.set(i)
		}
	}
	return e, parent, parentState, nil
}

// trackedState looks up every tracked file in a tree, as lookup does, but
// reads each tree once: a rebuild does this for every commit in the history.
func (s *Store) trackedState(root plumbing.Hash) ([]blobState, error) {
	trees := map[plumbing.Hash]*object.Tree{}
	st := make([]blobState, len(s.tracked))
	for i, p := range s.tracked {
		segs := strings.Split(p, "/")
		for h, j := root, 0; !h.IsZero(); j++ {
			t := trees[h]
			if t == nil {
				var err error
				if t, err = object.GetTree(s.repo.Storer, h); err != nil {
					return nil, fmt.Errorf("read tree %s: %w", shortID(h.String()), err)
				}
				trees[h] = t
			}
			e := findEntry(t.Entries, segs[j])
			if e == nil {
				break
			}
			if j == len(segs)-1 {
				if e.Mode != filemode.Dir { // a directory is not the file we track
					st[i] = blobState{exists: true, mode: e.Mode, hash: e.Hash}
				}
				break
			}
			if e.Mode != filemode.Dir {
				break
			}
			h = e.Hash
		}
	}
	return st, nil
}

// indexCommit records a commit the store just made on top of head, when
// the index was current: edits holds the paths it changed. When the index
// was not current the next use catches up by walking.
func (s *Store) indexCommit(c *object.Commit, head headState, edits map[string]workFile) {
	if s.idx == nil {
		return
	}
	var was plumbing.Hash
	if head.commit != nil {
		was = head.commit.Hash
	}
	if s.idx.head() != was {
		return
	}
	e := indexEntry{id: c.Hash, when: c.Author.When.Unix(), subject: toCommit(c).Subject}
	_, e.offset = c.Author.When.Zone()
	e.changed = s.trackedBits(func(p string) bool { _, ok := edits[p]; return ok })
	if len(c.ParentHashes) > 0 {
		e.parent = c.ParentHashes[0]
	}
	s.idx.add(e)
	s.appendIndexFile(s.idx, []indexEntry{e})
}

// forgetIndex drops an index that disagreed with the repository, so the
// next use rebuilds it from the history.
func (s *Store) forgetIndex(why string) {
	s.log.Warn("memory repository: commit index disagrees with the repository; rebuilding it", "why", why)
	s.idx = nil
	if err := os.Remove(s.indexPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("memory repository: could not remove the commit index", "err", err)
	}
}

func (s *Store) indexPath() string { return filepath.Join(s.gitDir, indexFile) }

func (s *Store) indexHeaderLine() string {
	return indexHeader + strings.Join(s.tracked, ",") + "\n"
}

// loadIndexFile reads the index file; nil when it is missing, made for another
// tracked list, or damaged in any way.
func (s *Store) loadIndexFile() *commitIndex {
	data, err := os.ReadFile(s.indexPath())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("memory repository: commit index unreadable; rebuilding it", "err", err)
		}
		return nil
	}
	x, err := parseIndex(data, s.indexHeaderLine())
	if err != nil {
		s.log.Warn("memory repository: commit index damaged or out of date; rebuilding it", "err", err)
		return nil
	}
	return x
}

func parseIndex(data []byte, header string) (*commitIndex, error) {
	rest, ok := bytes.CutPrefix(data, []byte(header))
	if !ok {
		return nil, errors.New("header does not match")
	}
	x := &commitIndex{pos: map[plumbing.Hash]int{}, size: int64(len(data))}
	for n := 2; len(rest) > 0; n++ {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("line %d: unterminated", n)
		}
		rest = after
		e, err := parseEntry(string(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if e.parent != x.head() {
			return nil, fmt.Errorf("line %d: parent is not the previous line's commit", n)
		}
		if _, dup := x.pos[e.id]; dup {
			return nil, fmt.Errorf("line %d: commit listed twice", n)
		}
		x.add(e)
	}
	return x, nil
}

// formatEntry writes "<id> <parent|-> <unix> <offset> <changed hex>
// <quoted subject> <crc32 of all before it>".
func formatEntry(e indexEntry) string {
	parent := "-"
	if !e.parent.IsZero() {
		parent = e.parent.String()
	}
	changed := hex.EncodeToString(e.changed)
	if changed == "" {
		changed = "-"
	}
	line := fmt.Sprintf("%s %s %d %d %s %s", e.id, parent, e.when, e.offset, changed, strconv.Quote(e.subject))
	return fmt.Sprintf("%s %08x\n", line, crc32.ChecksumIEEE([]byte(line)))
}

func parseEntry(line string) (indexEntry, error) {
	body, sum, ok := cutLast(line, " ")
	if !ok || sum != fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(body))) {
		return indexEntry{}, errors.New("checksum mismatch")
	}
	f := strings.SplitN(body, " ", 6)
	if len(f) != 6 {
		return indexEntry{}, errors.New("too few fields")
	}
	var e indexEntry
	var ok1, ok2 bool
	e.id, ok1 = parseHash(f[0])
	if e.parent, ok2 = parseHash(f[1]); f[1] == "-" {
		e.parent, ok2 = plumbing.ZeroHash, true
	}
	var errs [4]error
	e.when, errs[0] = strconv.ParseInt(f[2], 10, 64)
	e.offset, errs[1] = strconv.Atoi(f[3])
	if f[4] != "-" {
		e.changed, errs[2] = hex.DecodeString(f[4])
	}
	e.subject, errs[3] = strconv.Unquote(f[5])
	if !ok1 || !ok2 || errors.Join(errs[:]...) != nil {
		return indexEntry{}, errors.New("malformed fields")
	}
	return e, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// appendIndexFile appends entries to the file when it still is as x last saw
// it, and rewrites it otherwise (another process wrote it meanwhile).
func (s *Store) appendIndexFile(x *commitIndex, entries []indexEntry) {
	fi, err := os.Stat(s.indexPath())
	if x.size < 0 || err != nil || fi.Size() != x.size {
		s.saveIndexFile(x)
		return
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(formatEntry(e))
	}
	f, err := os.OpenFile(s.indexPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		// One write: a reader sees the old lines, or torn new ones it
		// rejects by checksum.
		_, err = f.WriteString(b.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Warn("memory repository: could not update the commit index", "err", err)
		x.size = -1
		return
	}
	x.size += int64(b.Len())
}

// saveIndexFile replaces the file with x.
func (s *Store) saveIndexFile(x *commitIndex) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	w.WriteString(s.indexHeaderLine())
	for _, e := range x.entries {
		w.WriteString(formatEntry(e))
	}
	_ = w.Flush()
	if err := replaceFile(s.indexPath(), buf.Bytes()); err != nil {
		s.log.Warn("memory repository: could not write the commit index", "err", err)
		x.size = -1
		return
	}
	x.size = int64(buf.Len())
}

// replaceFile writes p through a temporary file and a rename, so a reader
// sees the old or the new file. No fsync: a torn or lost index after a
// crash is rebuilt from the history.
func replaceFile(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
