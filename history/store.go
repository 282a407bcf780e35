package history

import (
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/store"
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

// The archive's embedded engine.
var _ store.History = (*Store)(nil)

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
	if err := os.MkdirAll(memoryDir, 0o700); err != nil {
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
		flock:      flock.New(filepath.Join(memoryDir, lockFile), flock.SetPermissions(fileMode)),
		warned:     map[string]bool{},
	}
	if err := s.migrateLegacy(); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", legacyFile, err)
	}
	return s, nil
}

// Owns reports whether rel (slash-separated, relative to the workspace)
// is one of the files a Store writes: the archive, its cursors, its index
// and its lock. A copy of a workspace leaves them to the archive's own
// copy (store.CopyArchive).
func Owns(rel string) bool {
	switch rel {
	case workspace.History, workspace.Cursor, workspace.DreamCursor, workspace.HistoryIndex, workspace.HistoryLock:
		return true
	}
	return false
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
