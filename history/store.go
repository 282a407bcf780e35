package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/workspace"
	"github.com/gofrs/flock"
)

// File names inside the memory directory (the workspace layout's).
var (
	historyFile     = path.Base(workspace.History)
	cursorFile      = path.Base(workspace.Cursor)
	dreamCursorFile = path.Base(workspace.DreamCursor)
	lockFile        = path.Base(workspace.HistoryLock)
	indexFile       = path.Base(workspace.HistoryIndex)
)

// legacyFile is nanobot's old archive, migrated once.
const legacyFile = "HISTORY.md"

// Store is the one reader and writer of memory/history.jsonl and its cursor
// files. It is safe for concurrent use, and several processes (the gateway
// and a `dreamgate dream run`) may hold a Store on the same directory: every
// write takes an exclusive file lock, and readers notice appends, rewrites
// and replacements made by others.
//
// Reads are served from an in-memory cache of where the entries Dream has
// not read yet are (cursor, session, place in the file; not their
// content), indexed by session; a read costs one stat when nothing changed
// and scans only the bytes appended since the last read otherwise, and the
// contents a caller asks for are read back at their offsets. A new Store
// neither parses the entries Dream has read nor scans the unread ones a
// previous process scanned: a private index (memory/.history_index, see
// index.go) says where the unread ones begin and holds their table, and is
// checked against the file before it is believed.
type Store struct {
	dir        string
	path       string
	cursorPath string
	dreamPath  string
	logger     *slog.Logger
	now        func() time.Time
	afterWrite func(point string) // Options.AfterWrite

	// mu serializes this process's use of the files (flock alone would not:
	// it is per open file, and a Flock value is not meant to be shared by
	// concurrent lockers) and guards everything below it.
	mu     sync.Mutex
	flock  *flock.Flock
	warned map[string]bool
	cache  cache

	indexPath string
	// indexMin is the least progress (bytes of read entries) worth noting
	// in the index, and the least file size for which it is looked at.
	indexMin int64
	// readBytes counts the history bytes scanned (contents read back for a
	// caller are not counted), for tests.
	readBytes int64
	// distrust: the file was found changed under a cache the index had
	// filled, so the next full read ignores the index.
	distrust bool
}

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

// Options configure a Store; the zero value is ready to use.
type Options struct {
	// Logger receives the warnings about damaged lines and the like. Nil
	// discards.
	Logger *slog.Logger
	// Now stamps appended entries. Nil is time.Now.
	Now func() time.Time
	// AfterWrite, when set, is called right after each write reaches the
	// disk, with its kill point's name ("history-append", "history-cursor",
	// "dream-cursor", "history-compact"): the chaos tests stop the process
	// there. Nil in production.
	AfterWrite func(point string)
}

// Open opens (creating it if needed) the memory directory of a workspace,
// <workspace>/memory. A legacy memory/HISTORY.md is migrated into
// history.jsonl once, as nanobot does: both cursor files are set to the last
// migrated cursor, so Dream does not replay the old archive, and the old file
// is kept as HISTORY.md.bak.
func Open(memoryDir string, opts Options) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(memoryDir, 0o755); err != nil {
		return nil, fmt.Errorf("create memory dir: %w", err)
	}
	s := &Store{
		dir:        memoryDir,
		path:       filepath.Join(memoryDir, historyFile),
		cursorPath: filepath.Join(memoryDir, cursorFile),
		dreamPath:  filepath.Join(memoryDir, dreamCursorFile),
		indexPath:  filepath.Join(memoryDir, indexFile),
		indexMin:   defaultIndexMin,
		logger:     logger,
		now:        now,
		afterWrite: opts.AfterWrite,
		flock:      flock.New(filepath.Join(memoryDir, lockFile), flock.SetPermissions(0o644)),
		warned:     map[string]bool{},
	}
	if err := s.migrateLegacy(); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", legacyFile, err)
	}
	return s, nil
}

// Path is the history file's path.
func (s *Store) Path() string { return s.path }

// lock takes the in-process mutex and the cross-process file lock, in that
// order (always), and returns the function that releases both.
func (s *Store) lock() (func(), error) {
	s.mu.Lock()
	if err := s.flock.Lock(); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lock history: %w", err)
	}
	return func() {
		if err := s.flock.Unlock(); err != nil {
			s.logger.Warn("cannot release the history lock", "err", err)
		}
		s.mu.Unlock()
	}, nil
}

// warnOnce logs a warning the first time a kind of problem is seen by this
// Store; a corrupt file must not flood the log on every read.
func (s *Store) warnOnce(kind, msg string, args ...any) {
	if s.warned[kind] {
		return
	}
	s.warned[kind] = true
	s.logger.Warn(msg, args...)
}

// Append adds an entry with the next cursor and returns it once it is on
// disk (fsynced). Trailing whitespace is trimmed and content beyond
// MaxEntryChars characters is cut with a "... (truncated)" marker; callers
// cap summaries and raw dumps more tightly themselves.
func (s *Store) Append(content, sessionKey string) (Entry, error) {
	return s.append(content, sessionKey, Source{})
}

func (s *Store) append(content, sessionKey string, src Source) (Entry, error) {
	content = trimRight(content)
	unlock, err := s.lock()
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	if capped, cut := textcut.Chars(content, MaxEntryChars, TruncatedSuffix); cut {
		s.warnOnce("oversize", "history entry over the size cap; truncating (further ones not logged)",
			"chars", len([]rune(content)), "cap", MaxEntryChars)
		content = capped
	}
	e, err := s.appendLocked(content, sessionKey, src)
	if err != nil {
		return Entry{}, fmt.Errorf("append history entry: %w", err)
	}
	return e, nil
}

func (s *Store) appendLocked(content, sessionKey string, src Source) (Entry, error) {
	_, statErr := os.Stat(s.path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return Entry{}, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, fmt.Errorf("stat: %w", err)
	}
	size := fi.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return Entry{}, fmt.Errorf("read tail: %w", err)
		}
		if last[0] != '\n' {
			// A crash tore the last line (we hold the lock, so nobody is
			// writing it). End it, so it is skipped as one bad line instead of
			// swallowing the entry written after it.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return Entry{}, fmt.Errorf("end torn line: %w", err)
			}
			size++
		}
	}
	if err := s.refreshLocked(); err != nil {
		return Entry{}, err
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		Cursor:     max(counter, s.cache.maxCursor) + 1,
		Timestamp:  s.now().Format(TimestampLayout),
		Content:    content,
		SessionKey: sessionKey,
	}
	e.setSource(src)
	line := append(appendEntryJSON(make([]byte, 0, len(content)+128), e), '\n')
	if _, err := f.Write(line); err != nil {
		// Take back a partial line rather than leave a torn one behind.
		_ = f.Truncate(size)
		return Entry{}, fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(size)
		return Entry{}, fmt.Errorf("sync: %w", err)
	}
	s.hook("history-append")
	if created {
		if err := workspace.SyncDir(s.dir); err != nil {
			return Entry{}, err
		}
	}
	if c := &s.cache; c.loaded && c.offset == size {
		if after, err := f.Stat(); err == nil {
			c.file, c.size, c.modTime = after, after.Size(), after.ModTime()
			c.add(e, c.offset, int64(len(line)))
			c.remember(c.offset, e)
			c.offset += int64(len(line))
			if len(c.head) < headLen {
				c.head = readHead(f) // the file was empty or short when read
			}
			s.saveIndexLocked(f)
		} else {
			*c = cache{}
		}
	} else {
		*c = cache{}
	}
	// .cursor only speeds up and secures numbering: the line above already
	// holds the cursor, so a failure here loses nothing.
	if err := workspace.WriteFile(s.cursorPath, []byte(strconv.Itoa(e.Cursor)), fileMode); err != nil {
		s.logger.Warn("cannot update the history cursor file", "err", err)
	}
	s.hook("history-cursor")
	return e, nil
}

// add records the valid entry e (its content is not needed), whose line
// of n bytes starts at off.
func (c *cache) add(e Entry, off, n int64) {
	c.noteRange(e)
	c.addMeta(meta{cursor: e.Cursor, off: off, n: n, key: c.keys.id(e.SessionKey)})
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

// parseLocked parses a line and warns (once per kind) about a bad one.
func (s *Store) parseLocked(line []byte) (Entry, bool) {
	if e, ok := parseCanonical(line); ok {
		return e, true
	}
	e, kind := s.parseSlowLocked(line)
	return e, kind == lineOK
}

func (s *Store) parseSlowLocked(line []byte) (Entry, lineKind) {
	e, kind := parseLine(line)
	if kind != lineOK && kind != lineBlank {
		s.warnLineLocked(kind, len(line))
	}
	return e, kind
}

func (s *Store) warnLineLocked(kind lineKind, n int) {
	s.warnOnce("line:"+kind.String(), "skipping a malformed history.jsonl line (further ones of this kind not logged)",
		"problem", kind.String(), "bytes", n)
}

// peekLocked is parseLocked for the cache, which needs every field of a
// valid entry but its content: a line of the usual shape is only checked,
// any other is parsed. It accepts the same lines and warns the same way.
func (s *Store) peekLocked(line []byte) (Entry, lineKind) {
	if e, ok := scanCanonical(line, s.cache.keys); ok {
		return e, lineOK
	}
	return s.parseSlowLocked(line)
}

// scanLocked reads the whole file, bypassing the cache, for the rare read
// that reaches below the cache's floor. fn returns false to stop.
func (s *Store) scanLocked(fn func(Entry) bool) error {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	n, err := readLines(f, func(line []byte, _ int64) bool {
		if e, ok := s.parseLocked(line); ok {
			return fn(e)
		}
		return true
	})
	s.readBytes += n
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	return nil
}

// Since returns the valid entries with Cursor > cursor, in file order, at
// most limit of them (0 means all).
func (s *Store) Since(cursor, limit int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		out, err = s.selectLocked(cursor, limit, func(string, int) bool { return true })
		return err
	})
	return out, err
}

// Unread returns the entries of one session that Dream has not consumed yet
// (Cursor > the dream cursor), in file order: what a prompt's "Recent
// history" shows.
func (s *Store) Unread(sessionKey string) ([]Entry, error) {
	return s.UnreadLast(sessionKey, 0)
}

// UnreadLast is Unread limited to the session's last n such entries (0
// means all). Its cost depends on the session's unread entries, not on
// other sessions'.
func (s *Store) UnreadLast(sessionKey string, n int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc := s.dreamCursorLocked()
	var out []Entry
	err := s.freshLocked(func() (err error) {
		s.pruneLocked(dc)
		c := &s.cache
		if dc < c.floor {
			// Moved back by hand: what is unread is partly only in the file.
			out, err = s.selectLocked(dc, 0, func(key string, _ int) bool { return key == sessionKey })
			if n > 0 && len(out) > n {
				out = out[len(out)-n:]
			}
			return err
		}
		key, known := c.keys.ids[sessionKey]
		var idx []int
		if known && int(key) < len(c.sessions) {
			idx = c.sessions[key]
		}
		if n > 0 && len(idx) > n {
			idx = idx[len(idx)-n:]
		}
		ms := make([]meta, 0, len(idx))
		for _, i := range idx {
			if c.metas[i].cursor > dc {
				ms = append(ms, c.metas[i])
			}
		}
		if c.lazy != nil && known && (n <= 0 || len(ms) < n) {
			// The rest is in the table not decoded yet: only this
			// session's part of it is.
			g, err := c.lazy.group(key)
			if err != nil {
				return errStale
			}
			g = slices.DeleteFunc(g, func(m meta) bool { return m.cursor <= dc })
			if n > 0 && len(g) > n-len(ms) {
				g = g[len(g)-(n-len(ms)):]
			}
			ms = append(g, ms...)
		}
		if out, err = s.readLocked(ms); out == nil && err == nil {
			out = []Entry{}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// freshLocked runs read after bringing the cache up to date, and again (at
// most twice more) after a full read that ignores the index, when read
// found the file changed under the cache (by another process, between the
// refresh and the read, or in place behind a stat's back).
func (s *Store) freshLocked(read func() error) error {
	for try := 0; ; try++ {
		if err := s.refreshLocked(); err != nil {
			return err
		}
		err := read()
		if !errors.Is(err, errStale) || try == 2 {
			return err
		}
		s.cache, s.distrust = cache{}, true
	}
}

// selectLocked returns the entries with Cursor > cursor that keep (given
// their session key and cursor) accepts, in file order, at most limit of
// them (0 means all).
func (s *Store) selectLocked(cursor, limit int, keep func(key string, cursor int) bool) ([]Entry, error) {
	c := &s.cache
	if cursor < c.floor {
		var out []Entry
		err := s.scanLocked(func(e Entry) bool {
			if e.Cursor > cursor && keep(e.SessionKey, e.Cursor) {
				out = append(out, e)
			}
			return limit <= 0 || len(out) < limit
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	if c.materialize() != nil {
		return nil, errStale
	}
	from := 0
	if c.sorted {
		from = sort.Search(len(c.metas), func(i int) bool { return c.metas[i].cursor > cursor })
	}
	var ms []meta
	for i := from; i < len(c.metas) && (limit <= 0 || len(ms) < limit); i++ {
		if m := c.metas[i]; m.cursor > cursor && keep(c.keys.names[m.key], m.cursor) {
			ms = append(ms, m)
		}
	}
	return s.readLocked(ms)
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

// DreamCursor is the highest cursor Dream has consumed (memory/.dream_cursor);
// 0 when the file is missing or unreadable as a number (nanobot's rule).
func (s *Store) DreamCursor() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, present, valid, err := readIntFile(s.dreamPath)
	if err != nil {
		return 0, err
	}
	if present && !valid {
		s.warnOnce("dream-cursor-bad", "the dream cursor file does not hold a non-negative integer; treating it as 0")
	}
	return n, nil
}

func (s *Store) dreamCursorLocked() int {
	n, present, valid, err := readIntFile(s.dreamPath)
	if err != nil {
		s.warnOnce("dream-cursor-read", "cannot read the dream cursor; treating it as 0", "err", err)
		return 0
	}
	if present && !valid {
		s.warnOnce("dream-cursor-bad", "the dream cursor file does not hold a non-negative integer; treating it as 0")
	}
	return n
}

// SetDreamCursor records that Dream consumed every entry up to n. The write
// is atomic and durable.
func (s *Store) SetDreamCursor(n int) error {
	if n < 0 {
		return fmt.Errorf("set dream cursor to %d: %w", n, ErrNegativeCursor)
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := workspace.WriteFile(s.dreamPath, []byte(strconv.Itoa(n)), fileMode); err != nil {
		return fmt.Errorf("set dream cursor: %w", err)
	}
	s.hook("dream-cursor")
	s.pruneLocked(n)
	return nil
}

// LastCursor is the highest cursor handed out so far (0 if none): the larger
// of memory/.cursor and the highest cursor in the file. The next Append gets
// LastCursor()+1.
func (s *Store) LastCursor() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return 0, err
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return 0, err
	}
	return max(counter, s.cache.maxCursor), nil
}

// Len is the number of valid entries in the file.
func (s *Store) Len() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return 0, err
	}
	return s.cache.count, nil
}

// Compact drops the oldest entries Dream has consumed (Cursor <= the dream
// cursor) while more than maxEntries valid entries remain. It never drops an
// entry Dream has not read, even if that leaves more than maxEntries (it logs
// a warning then). Malformed lines before the first kept entry go too; later
// ones are kept as they are. The file is replaced atomically, and
// memory/.cursor is made durable first so numbering continues past every
// dropped cursor. maxEntries <= 0 means no limit.
func (s *Store) Compact(maxEntries int) (dropped int, err error) {
	if maxEntries <= 0 {
		return 0, nil
	}
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	dropped, err = s.compactLocked(maxEntries)
	if err != nil {
		return 0, fmt.Errorf("compact history: %w", err)
	}
	return dropped, nil
}

func (s *Store) compactLocked(maxEntries int) (int, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	type line struct {
		raw   []byte
		entry Entry
		ok    bool
	}
	var lines []line
	valid, maxCursor := 0, 0
	for raw := range bytes.Lines(data) {
		raw = bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		e, ok := s.parseLocked(raw)
		if ok {
			valid++
			maxCursor = max(maxCursor, e.Cursor)
		}
		lines = append(lines, line{raw: raw, entry: e, ok: ok})
	}
	if valid <= maxEntries {
		return 0, nil
	}
	dc := s.dreamCursorLocked()
	dropped, keepFrom := 0, 0
	for keepFrom < len(lines) {
		l := lines[keepFrom]
		if l.ok && (valid-dropped <= maxEntries || l.entry.Cursor > dc) {
			break
		}
		if l.ok {
			dropped++
		}
		keepFrom++
	}
	if dropped == 0 {
		s.logger.Warn("history over its entry limit, but every entry is unread by Dream; keeping all",
			"entries", valid, "limit", maxEntries)
		return 0, nil
	}
	counter, _, _, err := readIntFile(s.cursorPath)
	if err != nil {
		return 0, err
	}
	last := max(counter, maxCursor)
	if err := workspace.WriteFile(s.cursorPath, []byte(strconv.Itoa(last)), fileMode); err != nil {
		return 0, err
	}
	var out bytes.Buffer
	out.Grow(len(data))
	for _, l := range lines[keepFrom:] {
		out.Write(l.raw)
		out.WriteByte('\n')
	}
	if err := workspace.WriteFile(s.path, out.Bytes(), fileMode); err != nil {
		return 0, err
	}
	s.hook("history-compact")
	s.cache = cache{}
	s.dropIndexLocked()
	if left := valid - dropped; left > maxEntries {
		s.logger.Warn("history still over its entry limit: the rest is unread by Dream and is kept",
			"entries", left, "limit", maxEntries)
	}
	s.logger.Info("compacted history", "dropped", dropped, "kept", valid-dropped)
	return dropped, nil
}
