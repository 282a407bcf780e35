package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/dreamgate/dreamgate/workspace"
)

// The index (memory/.history_index) lets a new process start reading
// history.jsonl where the entries Dream has not read begin, instead of
// parsing the whole archive to find them. It is private and only ever a
// shortcut: written when reading has moved far enough past the last one,
// checked against the file before it is used, and ignored (the file is
// read from the start) whenever anything about it does not hold. nanobot
// neither reads nor needs it.
//
// It says: in the file with this identity and these first bytes, every
// valid entry before Offset has a cursor at or below Floor; there are
// Count of them, the highest being Max. It is used only while the dream
// cursor is at or above Floor, so everything before Offset is read by
// Dream and the cache, which keeps only unread entries, needs none of it.

// indexVersion is the index format; another version is ignored.
const indexVersion = 1

// defaultIndexMin: reading that got less than this far past the last index
// (256 KiB, some hundreds of entries) does not write a new one, and a
// smaller history is read whole without looking for one.
const defaultIndexMin = 256 << 10

// markLen is how many bytes before Offset the index keeps, to check that
// the file still holds the same line end there.
const markLen = 64

type indexRecord struct {
	Version int    `json:"version"`
	Dev     uint64 `json:"dev,omitempty"`
	Ino     uint64 `json:"ino,omitempty"`
	Head    []byte `json:"head"` // the file's first min(headLen, Offset) bytes
	Mark    []byte `json:"mark"` // the min(markLen, Offset) bytes before Offset, ending in '\n'
	Offset  int64  `json:"offset"`
	Floor   int    `json:"floor"`
	Count   int    `json:"count"`
	Max     int    `json:"max"`
}

// loadIndexLocked returns the index when it holds for f (whose FileInfo is
// fi) and a dream cursor of floor.
func (s *Store) loadIndexLocked(f *os.File, fi os.FileInfo, floor int) (indexRecord, bool) {
	var ix indexRecord
	data, err := os.ReadFile(s.indexPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.warnOnce("index-read", "cannot read the history index; reading history.jsonl whole", "err", err)
		}
		return ix, false
	}
	if json.Unmarshal(data, &ix) != nil || ix.Version != indexVersion {
		s.warnOnce("index-bad", "the history index is unreadable; reading history.jsonl whole")
		return ix, false
	}
	if ix.Floor > floor || ix.Offset <= 0 || ix.Offset > fi.Size() || ix.Count < 0 || ix.Max < 0 || ix.Max > ix.Floor {
		return ix, false
	}
	if dev, ino, ok := fileID(fi); ok && (dev != ix.Dev || ino != ix.Ino) {
		return ix, false
	}
	if int64(len(ix.Head)) != min(headLen, ix.Offset) || !sameHead(f, ix.Head) {
		return ix, false
	}
	if int64(len(ix.Mark)) != min(markLen, ix.Offset) || ix.Mark[len(ix.Mark)-1] != '\n' ||
		!bytesAt(f, ix.Offset-int64(len(ix.Mark)), ix.Mark) {
		return ix, false
	}
	return ix, true
}

// saveIndexLocked writes the index for the cache's state when reading got
// at least indexMin past the last one. f is the history file the cache
// read, or nil to open it. Failing to write loses only the shortcut.
func (s *Store) saveIndexLocked(f *os.File) {
	c := &s.cache
	if !c.loaded || c.file == nil || !c.sorted {
		// Cursors out of order: the entries before the first unread one are
		// not simply those at or below the floor, so there is no prefix to
		// vouch for.
		return
	}
	at := c.offset
	if len(c.entries) > 0 {
		at = c.offs[0]
	}
	if at-c.from < s.indexMin {
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
	head := make([]byte, min(headLen, at))
	mark := make([]byte, min(markLen, at))
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.HasPrefix(head, c.head[:min(len(c.head), len(head))]) {
		return
	}
	if _, err := f.ReadAt(mark, at-int64(len(mark))); err != nil || mark[len(mark)-1] != '\n' {
		return
	}
	ix := indexRecord{
		Version: indexVersion, Head: head, Mark: mark, Offset: at,
		Floor: c.floor, Count: c.count - len(c.entries), Max: c.belowMax,
	}
	ix.Dev, ix.Ino, _ = fileID(c.file)
	data, err := json.Marshal(ix)
	if err == nil {
		err = workspace.WriteFile(s.indexPath, data, fileMode)
	}
	if err != nil {
		s.warnOnce("index-write", "cannot write the history index; later starts read history.jsonl whole", "err", err)
		return
	}
	c.from = at
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
