package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"
)

// cache holds what has been read of history.jsonl.
type cache struct {
	loaded  bool
	file    os.FileInfo // the file read, to notice a replacement; nil when it did not exist
	size    int64       // its size when last looked at
	modTime time.Time
	offset  int64 // bytes consumed: every complete line before it has been parsed
	// from is where the reading began: 0, or the offset a valid index
	// (see index.go) vouched for, whose prefix was never read.
	from int64
	// head is the file's first bytes (up to headLen) when it was read from
	// the start. Compaction always drops the first entry, so a file that
	// kept its inode (a reused one, or a rewrite in place) but not its head
	// is another file, and reading on from offset would start mid-line.
	head []byte

	// floor is the dream cursor when entries were last dropped: only entries
	// with Cursor > floor are kept, so memory stays bounded by what Dream has
	// not read.
	floor int
	// lazy is the index's table of the unread entries before those in
	// metas, not decoded yet (table.go); nil once decoded.
	lazy  *lazyTable
	metas []meta // valid entries with Cursor > floor, in file order (after lazy's)
	// sessions indexes metas by session key number (positions in metas,
	// in file order), so a turn touches only its own session's entries.
	sessions [][]int
	keys     *keyTable
	// scopes numbers the memory scopes of the entries (meta.scope; 0 is
	// the default scope's); nil until an entry of another scope is seen,
	// so a history of one scope costs nothing (scopeID, scopeName).
	scopes *keyTable
	// sorted: every valid entry consumed, in file order, has a higher
	// cursor than all before it (the format's rule; binary search is safe,
	// and the entries before the first kept one are exactly those at or
	// below floor).
	sorted bool

	count     int // valid entries in the consumed part, kept or not
	maxCursor int // highest valid cursor in the consumed part, 0 if none
	belowMax  int // highest valid cursor at or below floor, 0 if none

	ranges map[string]rangeMark // newest archived range per session generation, of the consumed part (source.go)
	// prefixRanges: ranges also covers the prefix before from, which a
	// valid index let the reading skip (read on the first ArchivedAt).
	prefixRanges bool
	// saved is how far the last index this cache wrote or used reached
	// (its End), to write the next one only after enough progress.
	saved int64
	// memo keeps some entries read back or appended, by line start, up to
	// memoBudget bytes of content (lazy.go).
	memo      map[int64]Entry
	memoBytes int
	// bad is the last malformed line of each kind read, so that an index
	// whose table covers it makes the next process warn about it too.
	bad map[lineKind]badLine
}

// badLine is a malformed line: its kind, where it starts, its length.
type badLine struct {
	Kind  lineKind `json:"kind"`
	Off   int64    `json:"off"`
	Bytes int      `json:"bytes"`
}

func (c *cache) noteBad(kind lineKind, off int64, n int) {
	if c.bad == nil {
		c.bad = map[lineKind]badLine{}
	}
	c.bad[kind] = badLine{Kind: kind, Off: off, Bytes: n}
}

// meta is what the cache keeps of an unread entry: enough to select it and
// to read it back, not its content, so memory does not grow with the
// unread entries' text.
type meta struct {
	cursor int
	off    int64 // where its line starts in the file
	n      int64 // its line's length, newline included
	key    int32 // its session key's number in the cache's keyTable
	// scope is its memory scope's number in the cache's scope table; -1
	// when not known (an entry of the index's table decoded for one
	// session only, which is read back and never kept).
	scope int32
}

// keyTable numbers session keys, so that metas hold no pointers (a big
// table costs the garbage collector nothing) and a scan allocates one
// string per session, not one per line.
type keyTable struct {
	ids   map[string]int32
	names []string
	last  int32 // the number idBytes or id returned last
}

func newKeyTable() *keyTable { return &keyTable{ids: map[string]int32{}} }

// newScopeTable is a keyTable of scope names that knows the default
// scope's, as number 0.
func newScopeTable() *keyTable {
	t := newKeyTable()
	t.id("")
	return t
}

// idBytes is id for a key still in bytes; it allocates only for a new key.
func (t *keyTable) idBytes(k []byte) int32 {
	if n, ok := t.ids[string(k)]; ok {
		t.last = n
		return n
	}
	return t.id(string(k))
}

// id returns k's number, giving it the next one if it has none.
func (t *keyTable) id(k string) int32 {
	if int(t.last) < len(t.names) && t.names[t.last] == k {
		return t.last
	}
	n, ok := t.ids[k]
	if !ok {
		n = int32(len(t.names))
		t.ids[k] = n
		t.names = append(t.names, k)
	}
	t.last = n
	return n
}

// newCache is an empty cache of a file not read yet, keeping entries
// above floor.
func newCache(floor int) cache {
	return cache{loaded: true, floor: floor, sorted: true, keys: newKeyTable()}
}

// add records the valid entry e (its content is not needed), whose line
// of n bytes starts at off.
func (c *cache) add(e Entry, off, n int64) {
	c.noteRange(e)
	c.addMeta(meta{cursor: e.Cursor, off: off, n: n, key: c.keys.id(e.SessionKey), scope: c.scopeID(string(e.Scope))})
}

// scopeID is the number of a scope's name, given one if it has none; the
// default scope's is 0.
func (c *cache) scopeID(name string) int32 {
	if name == "" {
		return 0
	}
	if c.scopes == nil {
		c.scopes = newScopeTable()
	}
	return c.scopes.id(name)
}

// scopeName is the name numbered id (not -1, the unknown one).
func (c *cache) scopeName(id int32) string {
	if c.scopes == nil {
		return ""
	}
	return c.scopes.names[id]
}

// scopeNames lists the scopes' names by number.
func (c *cache) scopeNames() []string {
	if c.scopes == nil {
		return []string{""}
	}
	return c.scopes.names
}

// addMeta records a valid entry (whose source, if any, is noted already).
func (c *cache) addMeta(m meta) {
	if c.count > 0 && m.cursor <= c.maxCursor {
		c.sorted = false
	}
	c.count++
	c.maxCursor = max(c.maxCursor, m.cursor)
	if m.cursor <= c.floor {
		c.belowMax = max(c.belowMax, m.cursor)
		return
	}
	c.index(m.key, len(c.metas))
	c.metas = append(c.metas, m)
}

// index notes that metas[i] is of the session numbered key.
func (c *cache) index(key int32, i int) {
	if int(key) >= len(c.sessions) {
		c.sessions = append(c.sessions, make([][]int, int(key)+1-len(c.sessions))...)
	}
	c.sessions[key] = append(c.sessions[key], i)
}

// refreshLocked brings the cache up to date with the file: nothing to do if
// its size and mtime are unchanged, the appended bytes if it grew, a full
// read if it was replaced, shrank or rewritten in place. A full read starts
// where a valid index's table of unread entries ends, or where it says the
// unread entries begin. Lines are scanned, not decoded (scanCanonical).
func (s *Store) refreshLocked() error {
	c := &s.cache
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		if !c.loaded || c.file != nil {
			*c = newCache(s.dreamCursorLocked())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat history: %w", err)
	}
	if c.loaded && c.file != nil && os.SameFile(c.file, fi) && fi.Size() == c.size && fi.ModTime().Equal(c.modTime) {
		return nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return fmt.Errorf("stat history: %w", err)
	}
	sameFile := c.loaded && c.file != nil && os.SameFile(c.file, fi)
	inPlace := fi.Size() == c.size && !fi.ModTime().Equal(c.modTime)
	if !sameFile || fi.Size() < c.offset || inPlace || !sameHead(f, c.head) {
		*c = newCache(s.dreamCursorLocked())
		if fi.Size() >= s.indexMin && !s.distrust {
			s.loadIndexLocked(f, fi)
		}
		s.distrust = false
	}
	if c.offset == 0 {
		c.head = readHead(f)
	}
	start := c.offset
	n, err := readLines(io.NewSectionReader(f, start, fi.Size()-start), func(line []byte, at int64) bool {
		switch e, kind := s.peekLocked(line); kind {
		case lineOK:
			c.add(e, start+at, int64(len(line))+1)
		case lineBlank:
		default:
			c.noteBad(kind, start+at, len(line))
		}
		return true
	})
	s.readBytes += n
	if err != nil {
		*c = cache{}
		return fmt.Errorf("read history: %w", err)
	}
	c.offset += n
	c.file, c.size, c.modTime = fi, fi.Size(), fi.ModTime()
	s.saveIndexLocked(f)
	return nil
}

// headLen bounds cache.head: enough to hold `{"cursor": N` of any entry.
const headLen = 64

// readHead returns the first bytes of f, up to headLen (fewer when the file
// is shorter); nil when it cannot read them.
func readHead(f *os.File) []byte {
	buf := make([]byte, headLen)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	return buf[:n]
}

// sameHead reports whether f still starts with head. An empty head (the
// file was empty, or its start could not be read) proves nothing, and the
// inode and size checks are all there is.
func sameHead(f *os.File, head []byte) bool {
	if len(head) == 0 {
		return true
	}
	buf := make([]byte, len(head))
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.Equal(buf[:n], head)
}

// pruneLocked drops cached entries Dream has consumed; they are still in the
// file, and reads below the floor go to the file.
func (s *Store) pruneLocked(dreamCursor int) {
	c := &s.cache
	if !c.loaded || dreamCursor <= c.floor {
		return
	}
	c.floor = dreamCursor
	kept := c.metas[:0:0]
	c.sessions = nil
	for _, m := range c.metas {
		if m.cursor <= dreamCursor {
			c.belowMax = max(c.belowMax, m.cursor)
			continue
		}
		c.index(m.key, len(kept))
		kept = append(kept, m)
	}
	c.metas = slices.Clip(kept)
	s.saveIndexLocked(nil)
}
