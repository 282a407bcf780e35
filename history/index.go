package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"

	"github.com/dreamgate/dreamgate/workspace"
)

// The index (memory/.history_index) lets a new process skip what an
// earlier one already went through: it starts where the entries Dream has
// not read begin, and it takes their table (cursor, session key, place in
// the file) from the index instead of scanning them again, so a start
// scans only the bytes appended since the index was written. It is
// private and only ever a shortcut: written when reading has moved far
// enough past the last one, checked against the file before it is used,
// and ignored (the file is read from the start) whenever anything about it
// does not hold. nanobot neither reads nor needs it.
//
// It is one line of JSON, the header, then the table in binary. The header
// says: in the file with this identity and these first bytes, every valid
// entry before Offset has a cursor at or below Floor; there are Count of
// them, the highest being Max. It is used only while the dream cursor is
// at or above Floor, so everything before Offset is read by Dream and the
// cache, which keeps only unread entries, needs none of it. From Offset up
// to End (a line end, whose bytes before it are EndMark) the valid entries
// are exactly the table's, and sessionRanges of the part read are in it
// too. An index of the first format (no End: End is Offset) is still
// read.

// indexVersion is the index format. An index of an earlier version (1: no
// memory scope in its table) is ignored without a warning, and the next
// one written is of this version; a later or unknown version is ignored
// with one.
const indexVersion = 2

// defaultIndexMin: reading that got less than this far past the last index
// (256 KiB, some hundreds of entries) does not write a new one, and a
// smaller history is read whole without looking for one.
const defaultIndexMin = 256 << 10

// markLen is how many bytes before Offset (and End) the index keeps, to
// check that the file still holds the same line end there.
const markLen = 64

type indexRecord struct {
	Version int    `json:"version"`
	Dev     uint64 `json:"dev,omitempty"`
	Ino     uint64 `json:"ino,omitempty"`
	Head    []byte `json:"head"` // the file's first min(headLen, End) bytes
	Mark    []byte `json:"mark"` // the min(markLen, Offset) bytes before Offset, ending in '\n'
	Offset  int64  `json:"offset"`
	Floor   int    `json:"floor"`
	Count   int    `json:"count"`
	Max     int    `json:"max"`

	End      int64  `json:"end,omitempty"`
	EndMark  []byte `json:"end_mark,omitempty"`  // the min(markLen, End) bytes before End
	Table    int    `json:"table,omitempty"`     // the table's length in bytes
	TableSum uint32 `json:"table_sum,omitempty"` // its CRC-32C
	LastSum  uint32 `json:"last_sum,omitempty"`  // CRC-32C of the last table entry's line
	// Last is the last table entry: its cursor, line start and length.
	Last [3]int64 `json:"last,omitzero"`
	// MTime is the file's modification time (Unix ns) when it ended at
	// End: a file of that size with another one was rewritten in place.
	MTime int64 `json:"mtime,omitempty"`
	// Bad lists a malformed line of each kind between Offset and End, for
	// the warning a process that read them would log.
	Bad []badLine `json:"bad,omitempty"`
}

// castagnoli is CRC-32C's table, made on first use (crc32 keeps it), not
// at start-up.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// loadIndexLocked fills the new cache from the index when it holds for f
// (whose FileInfo is fi) and the cache's floor (the dream cursor).
func (s *Store) loadIndexLocked(f *os.File, fi os.FileInfo) {
	c := &s.cache
	data, err := os.ReadFile(s.indexPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.warnOnce("index-read", "cannot read the history index; reading history.jsonl whole", "err", err)
		}
		return
	}
	header, table, _ := bytes.Cut(data, []byte{'\n'})
	var ix indexRecord
	if json.Unmarshal(header, &ix) != nil || ix.Version > indexVersion || ix.Version < 1 {
		s.warnOnce("index-bad", "the history index is unreadable; reading history.jsonl whole")
		return
	}
	if ix.Version < indexVersion {
		// An earlier format: this read rebuilds it.
		return
	}
	if ix.End == 0 {
		ix.End = ix.Offset
	}
	if ix.Floor > c.floor || ix.Offset < 0 || ix.End <= 0 || ix.Offset > ix.End || ix.End > fi.Size() ||
		ix.Count < 0 || ix.Max < 0 || ix.Max > ix.Floor {
		return
	}
	if dev, ino, ok := fileID(fi); ok && (dev != ix.Dev || ino != ix.Ino) {
		return
	}
	if ix.MTime != 0 && fi.Size() == ix.End && fi.ModTime().UnixNano() != ix.MTime {
		return
	}
	if int64(len(ix.Head)) != min(headLen, ix.End) || !sameHead(f, ix.Head) {
		return
	}
	if ix.Offset > 0 && !markHolds(f, ix.Offset, ix.Mark) {
		return
	}
	var pt parsedTable
	if ix.End > ix.Offset {
		if !markHolds(f, ix.End, ix.EndMark) {
			return
		}
		last := meta{cursor: int(ix.Last[0]), off: ix.Last[1], n: ix.Last[2]}
		ok := len(table) == ix.Table && crc32.Checksum(table, castagnoli()) == ix.TableSum &&
			last.cursor > 0 && last.off >= ix.Offset && last.n > 0 && last.off+last.n <= ix.End &&
			(ix.Count == 0 || last.cursor > ix.Max)
		if ok {
			pt, ok = parseTable(table, ix.Offset, ix.End, last)
		}
		if !ok {
			s.warnOnce("index-bad", "the history index is unreadable; reading history.jsonl whole")
			return
		}
		line := make([]byte, last.n)
		if _, err := f.ReadAt(line, last.off); err != nil || crc32.Checksum(line, castagnoli()) != ix.LastSum {
			return
		}
	} else if len(table) != 0 || ix.Table != 0 {
		return
	}
	c.offset, c.from, c.head, c.saved = ix.End, ix.Offset, ix.Head, ix.End
	c.count, c.maxCursor, c.belowMax = ix.Count, ix.Max, ix.Max
	if pt.lazy != nil {
		c.keys, c.scopes, c.ranges, c.lazy = pt.keys, pt.scopes, pt.ranges, pt.lazy
		c.count += pt.lazy.n
		c.maxCursor = pt.lazy.last.cursor
	}
	for _, b := range ix.Bad {
		if b.Kind > lineBlank && b.Kind <= lineBadFields && b.Off >= ix.Offset && b.Off < ix.End && b.Bytes >= 0 {
			s.warnLineLocked(b.Kind, b.Bytes)
			c.noteBad(b.Kind, b.Off, b.Bytes)
		}
	}
}

// markHolds reports whether the mark, the bytes f holds before the line
// end at, is whole and still there.
func markHolds(f *os.File, at int64, mark []byte) bool {
	return int64(len(mark)) == min(markLen, at) && mark[len(mark)-1] == '\n' &&
		bytesAt(f, at-int64(len(mark)), mark)
}

// saveIndexLocked writes the index for the cache's state when reading got
// at least indexMin past the last one, in where the unread entries begin or
// in how far the file was read. f is the history file the cache read, or
// nil to open it. Failing to write loses only the shortcut.
func (s *Store) saveIndexLocked(f *os.File) {
	c := &s.cache
	if !c.loaded || c.file == nil || !c.sorted || c.offset == 0 {
		// Cursors out of order: the entries before the first unread one are
		// not simply those at or below the floor, so there is no prefix to
		// vouch for.
		return
	}
	if c.lazy != nil {
		// Where the unread entries begin is not known without decoding the
		// table: only reading far enough is worth it.
		if c.offset-c.saved < s.indexMin || c.materialize() != nil {
			return
		}
	}
	at := c.offset
	if len(c.metas) > 0 {
		at = c.metas[0].off
	}
	if at-c.from < s.indexMin && c.offset-c.saved < s.indexMin {
		return
	}
	if f == nil {
		var err error
		if f, err = os.Open(s.path); err != nil {
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !os.SameFile(fi, c.file) || fi.Size() < c.offset {
			return
		}
	}
	head := make([]byte, min(headLen, c.offset))
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.HasPrefix(head, c.head[:min(len(c.head), len(head))]) {
		return
	}
	ix := indexRecord{
		Version: indexVersion, Head: head, Offset: at, End: c.offset,
		Floor: c.floor, Count: c.count - len(c.metas), Max: c.belowMax,
	}
	var ok bool
	if ix.Mark, ok = markAt(f, at); !ok {
		return
	}
	if ix.EndMark, ok = markAt(f, c.offset); !ok {
		return
	}
	var table []byte
	if len(c.metas) > 0 {
		last := c.metas[len(c.metas)-1]
		line := make([]byte, last.n)
		if _, err := f.ReadAt(line, last.off); err != nil {
			return
		}
		ix.LastSum = crc32.Checksum(line, castagnoli())
		ix.Last = [3]int64{int64(last.cursor), last.off, last.n}
		table = encodeTable(c.keys.names, c.scopeNames(), c.metas, c.ranges, at)
		ix.Table, ix.TableSum = len(table), crc32.Checksum(table, castagnoli())
	}
	for _, b := range c.bad {
		if b.Off >= at {
			ix.Bad = append(ix.Bad, b)
		}
	}
	slices.SortFunc(ix.Bad, func(a, b badLine) int { return int(a.Kind - b.Kind) })
	if c.size == c.offset {
		ix.MTime = c.modTime.UnixNano()
	}
	ix.Dev, ix.Ino, _ = fileID(c.file)
	header, err := json.Marshal(ix)
	if err == nil {
		err = workspace.WriteFile(s.indexPath, append(append(header, '\n'), table...), fileMode)
	}
	if err != nil {
		s.warnOnce("index-write", "cannot write the history index; later starts read history.jsonl whole", "err", err)
		return
	}
	c.from, c.saved = at, c.offset
}

// markAt returns the mark of the line end at (nil at 0): the bytes before
// it, which must end a line.
func markAt(f *os.File, at int64) ([]byte, bool) {
	if at == 0 {
		return nil, true
	}
	mark := make([]byte, min(markLen, at))
	if _, err := f.ReadAt(mark, at-int64(len(mark))); err != nil || mark[len(mark)-1] != '\n' {
		return nil, false
	}
	return mark, true
}

// dropIndexLocked removes the index of a file about to be replaced by this
// process. (Another process's replacement is caught by the checks.)
func (s *Store) dropIndexLocked() {
	if err := os.Remove(s.indexPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.warnOnce("index-remove", "cannot remove the history index", "err", err)
	}
}

// bytesAt reports whether f holds want at off.
func bytesAt(f *os.File, off int64, want []byte) bool {
	got := make([]byte, len(want))
	_, err := f.ReadAt(got, off)
	return err == nil && bytes.Equal(got, want)
}
