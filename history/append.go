package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// Append adds an entry with the next cursor and returns it once it is on
// disk (fsynced). Trailing whitespace is trimmed and content beyond
// MaxEntryChars characters is cut with a "... (truncated)" marker; callers
// cap summaries and raw dumps more tightly themselves. The entry belongs
// to the default scope, as every nanobot entry does; AppendIn writes
// another's.
func (s *Store) Append(content, sessionKey string) (Entry, error) {
	return s.append(audience.Default, content, sessionKey, Source{})
}

// AppendIn is Append for an entry of the memory scope scope: Dream reads it
// into that scope's files only. A scope audience.ParseScope refuses is an
// error, and nothing is written: an entry must never land in a scope, the
// default one least of all, that its conversation did not come from.
func (s *Store) AppendIn(scope audience.Scope, content, sessionKey string) (Entry, error) {
	return s.append(scope, content, sessionKey, Source{})
}

func (s *Store) append(scope audience.Scope, content, sessionKey string, src Source) (Entry, error) {
	if err := store.CheckScope(scope); err != nil {
		return Entry{}, err
	}
	chars := len([]rune(content))
	content, cut := store.EntryContent(content)
	unlock, err := s.lock()
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	if cut {
		s.warnOnce("oversize", "history entry over the size cap; truncating (further ones not logged)",
			"chars", chars, "cap", MaxEntryChars)
	}
	e, err := s.appendLocked(scope, content, sessionKey, src)
	if err != nil {
		return Entry{}, fmt.Errorf("append history entry: %w", err)
	}
	return e, nil
}

// openAppendLocked opens the file for appending, ending a torn last line
// first, and returns it with its size and whether it was created. The
// caller holds the lock and closes the file.
func (s *Store) openAppendLocked() (f *os.File, size int64, created bool, err error) {
	_, statErr := os.Stat(s.path)
	created = errors.Is(statErr, fs.ErrNotExist)
	f, err = os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, fileMode)
	if err != nil {
		return nil, 0, false, fmt.Errorf("open: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("stat: %w", err)
	}
	size = fi.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			f.Close()
			return nil, 0, false, fmt.Errorf("read tail: %w", err)
		}
		if last[0] != '\n' {
			// A crash tore the last line (we hold the lock, so nobody is
			// writing it). End it, so it is skipped as one bad line instead of
			// swallowing the entry written after it.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, 0, false, fmt.Errorf("end torn line: %w", err)
			}
			size++
		}
	}
	return f, size, created, nil
}

func (s *Store) appendLocked(scope audience.Scope, content, sessionKey string, src Source) (Entry, error) {
	f, size, created, err := s.openAppendLocked()
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
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
		Scope:      scope,
	}
	e.SetSource(src)
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
