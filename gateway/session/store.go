package session

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/internal/leftovers"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// Store hands out sessions by key, loading each from disk once.
type Store struct {
	dir    string
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	open map[string]*Session
	// aside holds the set-aside sessions this store has in memory (Rotate's
	// old ones, OpenSetAside's), by path prefix, so a disk scan archives
	// the very Session a /new is archiving (the consolidator serialises
	// them) instead of a second copy.
	aside map[string]*Session
	wrap  func(io.Writer) io.Writer // WrapWrites
	// afterWrite is SetAfterWrite's hook, nil in production.
	afterWrite func(point string)
	// conv keeps the conversations in a database (NewStoreOn, db.go); nil
	// keeps them in files under dir.
	conv store.Conversations
}

// NewStore opens (creating) the sessions directory.
func NewStore(dir string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create sessions dir: %w", err)
	}
	st := &Store{dir: dir, logger: logger, now: time.Now, open: map[string]*Session{}, aside: map[string]*Session{}}
	if n, err := st.RemoveLeftovers(); err != nil {
		logger.Warn("leftover temp files in the sessions dir", "removed", n, "err", err)
	} else if n > 0 {
		logger.Info("removed leftover temp files from the sessions dir", "count", n)
	}
	return st, nil
}

// SetClock replaces the clock that stamps messages (tests).
func (st *Store) SetClock(now func() time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.now = now
}

// WrapWrites puts wrap between every session loaded or created from now on
// and its message file, so tests can make a write fail part way (a full
// disk) without filling one. Nil writes to the file directly.
func (st *Store) WrapWrites(wrap func(io.Writer) io.Writer) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.wrap = wrap
}

// Get returns the session for key, loading it from disk or creating it,
// and waking it when it sleeps (Release); a session another process
// changed meanwhile is loaded afresh.
func (st *Store) Get(key string) (*Session, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.liveLocked(key)
}

// liveLocked returns key's live session, awake. The caller holds st.mu.
func (st *Store) liveLocked(key string) (*Session, error) {
	if s, ok := st.open[key]; ok {
		s.mu.Lock()
		err := s.wakeLocked()
		s.mu.Unlock()
		if err == nil {
			return s, nil
		}
		// Another process has it now, or had it: what this one holds in
		// memory is not to be used again.
		delete(st.open, key)
		if !errors.Is(err, errStale) {
			return nil, err
		}
		st.logger.Info("conversation changed by another process while this one let go of it; loading it again", "session", key)
	}
	s, err := st.load(key)
	if err != nil {
		return nil, err
	}
	st.open[key] = s
	return s, nil
}

// Release lets go of the append handle and lock of key's live session,
// which stays in memory and wakes on the next Get or write (lock.go): the
// caller has no work for it now. It reports whether there was one awake.
func (st *Store) Release(key string) bool {
	st.mu.Lock()
	s, ok := st.open[key]
	st.mu.Unlock()
	return ok && s.sleep()
}

// Loaded returns the sessions currently in memory.
func (st *Store) Loaded() []*Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*Session, 0, len(st.open))
	for _, s := range st.open {
		out = append(out, s)
	}
	return out
}

// OnDisk is a conversation found in the sessions directory.
type OnDisk struct {
	Key string
	// Modified is when its message file was last written: no message
	// came later.
	Modified time.Time
}

// ListOnDisk lists the current conversation of every key with a message
// file, loaded or not (conversations set aside by /new are not listed). It
// reads the directory and stats the files; it opens none.
func (st *Store) ListOnDisk() ([]OnDisk, error) {
	if st.conv != nil {
		live, err := st.listDB(false)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out := make([]OnDisk, 0, len(live))
		for _, c := range live {
			out = append(out, OnDisk{Key: c.Key, Modified: c.Modified})
		}
		return out, nil
	}
	files, err := st.messageFiles()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []OnDisk
	for _, f := range files {
		if f.id == "" {
			out = append(out, OnDisk{Key: f.key, Modified: f.modified})
		}
	}
	return out, nil
}

// IsLoaded reports whether key's session is in memory.
func (st *Store) IsLoaded(key string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.open[key]
	return ok
}

// Evict drops s from memory if it is still the session held for its key,
// closing its file; the next Get loads it from disk again. A long-running
// gateway thus holds only the conversations that are active, not every
// thread it ever saw.
func (st *Store) Evict(s *Session) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	key := s.Key()
	if st.open[key] != s {
		return false
	}
	delete(st.open, key)
	if err := s.close(); err != nil {
		st.logger.Warn("closing a session failed", "session", key, "err", err)
	}
	return true
}

// Forget drops key's live session from memory, so the next Get reads it
// from the store: another process may have written it since (a
// conversation shared between processes changes hands).
func (st *Store) Forget(key string) {
	st.mu.Lock()
	s, ok := st.open[key]
	if ok {
		delete(st.open, key)
	}
	st.mu.Unlock()
	if ok {
		if err := s.close(); err != nil {
			st.logger.Warn("closing a session failed", "session", key, "err", err)
		}
	}
}

// Rotate starts a new session under key. The old files are renamed aside
// with the old session's id, and the returned old Session keeps working on
// them (its unarchived tail can still be archived).
func (st *Store) Rotate(key string) (old, fresh *Session, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conv != nil {
		return st.rotateDB(key)
	}
	if old, err = st.liveLocked(key); err != nil {
		return nil, nil, err
	}
	base := st.base(key)
	keyLock, err := old.moveAside(filepath.Join(st.dir, base+"."+old.ID()))
	if err != nil {
		return nil, nil, fmt.Errorf("set session %s aside: %w", key, err)
	}
	aside := old.path()
	// Its name is new, so only another process's scan that listed it in
	// this very moment could hold its lock; both may then archive it, and
	// the consolidator's check of the archived ranges keeps the second
	// from writing it again once the first is done.
	if fl, err := takeLock(aside+".lock", key); err != nil {
		st.logger.Debug("set-aside conversation locked by another process", "session", key, "err", err)
	} else {
		old.setLock(fl)
	}
	st.aside[aside] = old
	fresh = st.create(key, base)
	fresh.lock = keyLock
	st.open[key] = fresh
	return old, fresh, nil
}

// Close closes every open file.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	var errs []error
	for _, s := range st.open {
		errs = append(errs, s.close())
	}
	for _, s := range st.aside {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

func (st *Store) base(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

func (st *Store) prefix(key string) string {
	return filepath.Join(st.dir, st.base(key))
}

// load loads key's live conversation, taking its lock first (it is read
// only once no other process writes to it); the caller registers it in
// st.open.
func (st *Store) load(key string) (*Session, error) {
	if st.conv != nil {
		return st.loadDB(key)
	}
	fl, err := takeLock(st.prefix(key)+".lock", key)
	if err != nil {
		return nil, err
	}
	s, err := st.loadLocked(key)
	if err != nil {
		_ = fl.Close()
		return nil, err
	}
	s.lock = fl
	return s, nil
}

func (st *Store) loadLocked(key string) (*Session, error) {
	base := st.base(key)
	prefix := filepath.Join(st.dir, base)
	if _, err := os.Stat(prefix + ".meta.json"); errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(prefix + ".jsonl"); errors.Is(serr, fs.ErrNotExist) {
			return st.create(key, base), nil
		}
	}
	return st.loadAt(key, prefix, "")
}

// loadAt loads the session whose files are prefix+".jsonl" and
// prefix+".meta.json". id is the ID to give it when its metadata holds
// none ("" for a new one): a set-aside file's name carries the ID its
// archive entries were (or will be) written under.
func (st *Store) loadAt(key, prefix, id string) (*Session, error) {
	raw, err := os.ReadFile(prefix + ".meta.json")
	if errors.Is(err, fs.ErrNotExist) {
		raw = nil // messages without metadata: rebuild it below
	} else if err != nil {
		return nil, fmt.Errorf("read session %s metadata: %w", key, err)
	}
	s := &Session{prefix: prefix, logger: st.logger, now: st.now, wrap: st.wrap, afterWrite: st.afterWrite}
	if raw != nil {
		if err := json.Unmarshal(raw, &s.meta); err != nil {
			st.logger.Warn("session metadata unreadable; starting it anew, messages kept", "session", key, "err", err)
			s.meta = meta{}
		}
	}
	if s.meta.ID == "" {
		if id == "" {
			id = newID()
		}
		s.meta = meta{Key: key, ID: id, Created: st.now().UTC()}
	}
	s.meta.Key = key
	whole, err := s.loadMessages()
	if err != nil {
		return nil, err
	}
	s.audienceFromOrigins()
	if whole && raw != nil && s.meta.Tail != nil {
		s.recordMark(raw)
	}
	return s, nil
}

// create starts a session in memory. Nothing is written until the first
// message (the message file) or the first archive (the metadata): a new
// conversation costs no fsync, and a key that never speaks leaves no file.
func (st *Store) create(key, base string) *Session {
	return &Session{
		prefix: filepath.Join(st.dir, base),
		logger: st.logger,
		now:    st.now,
		wrap:   st.wrap,
		meta:   meta{Key: key, ID: newID(), Created: st.now().UTC()},

		afterWrite: st.afterWrite,
		conv:       st.conv,
	}
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// SetAfterWrite sets a hook called right after each write of a session
// file reaches the disk, with its kill point ("session-append",
// "session-meta"), for sessions loaded or created from now on: the chaos
// tests stop the process there. Nil in production.
func (st *Store) SetAfterWrite(hook func(point string)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.afterWrite = hook
}

// RemoveLeftovers deletes the temp files of metadata writes that a killed
// process left in the sessions directory (the atomic write's temps, and the
// "<key>.meta.json.tmp*" names of earlier versions) once they are older
// than leftovers.MinAge, and returns how many it removed. Session files
// themselves are never touched.
func (st *Store) RemoveLeftovers() (int, error) {
	removed, err := leftovers.Sweep(st.dir, time.Now().Add(-leftovers.MinAge), func(name string) bool {
		return workspace.IsTemp(name) || strings.Contains(name, ".meta.json.tmp")
	})
	if err != nil {
		return removed, fmt.Errorf("remove leftover temp files: %w", err)
	}
	return removed, nil
}
