package recall

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store"
)

// History is the archive the index reads: *history.Store.
type History interface {
	// Since returns the valid entries with Cursor > cursor, in file order,
	// at most limit of them (0 means all).
	Since(cursor, limit int) ([]history.Entry, error)
	// LastCursor is the highest cursor handed out so far.
	LastCursor() (int, error)
}

// Conversations are the session files the index reads archived messages
// from; cmd adapts the session store to it. Neither method may take a
// conversation's lock: the gateway must never be refused its own
// conversation because the index was read.
type Conversations interface {
	// Files lists every message file, current or set aside, with a stamp
	// that changes whenever the file or its metadata does.
	Files() ([]ConversationFile, error)
	// Read reads the archived messages of the file name: it asks resume
	// where to start in the conversation generation it finds (the values
	// an earlier Read returned in Next and NextAt, or 0, 0), calls fn with
	// each message from there on, and says where the next read starts. A
	// file that changed while it read is an error, and nothing fn saw is
	// to be kept. fn may be called for messages before the position asked
	// for (a file edited by hand is read from its start); it skips them.
	Read(name string, resume func(id string) (from int, at int64), fn func(i int, m llm.Message) error) (ConversationRead, error)
}

// ConversationFile is a message file as Conversations.Files lists it.
type ConversationFile struct {
	Name, Key, Stamp string
}

// ConversationRead is what Conversations.Read found.
type ConversationRead struct {
	Key, ID  string
	Audience audience.Audience
	Next     int
	NextAt   int64
}

// Options configure an Index.
type Options struct {
	// Store is the index's engine; nil is the embedded one, IndexFiles
	// in Dir.
	Store store.RecallIndex
	// Dir holds the embedded engine's index (a rebuildable cache): the
	// state directory's recall folder. It is created, owner-only, on
	// first use.
	Dir string
	// Memory is the workspace's memory: each scope's cold memory is
	// indexed (nil indexes none), and it says which scope a conversation's
	// messages belong to — with memory shared, the default scope for all,
	// as its archive entries do (an index built under the other setting
	// is rebuilt).
	Memory *memory.Memory
	// History and Conversations are the other sources; nil ones are left
	// out.
	History       History
	Conversations Conversations
	// Logger gets the index's few lines (a rebuild and why, a failed
	// update). Nil discards.
	Logger *slog.Logger
	// Wait bounds how long a search waits for an update under way before
	// it answers from what is indexed; 0 means 2 s.
	Wait time.Duration
	// Every is how often at most a search starts an update; 0 means 2 s.
	Every time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Index is total recall: the full-text index of what was said, kept up to
// date from its sources and searched within the scopes a search may read,
// whichever engine keeps it. Opening it costs nothing: the embedded
// engine's database is opened, and every engine brought up to date, on
// first use. It is safe for concurrent use; Close stops the update it may
// be running.
type Index struct {
	opts   Options
	store  store.RecallIndex
	files  *IndexFiles // the embedded engine when Index made it, closed with it
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// running is closed when the update under way ends; nil when none
	// runs.
	running chan struct{}
	last    time.Time
	// dirty: the sources changed since the last update started (Changed);
	// fresh: an update of this process finished.
	dirty, fresh bool
	closed       bool
	wg           sync.WaitGroup
}

// Open returns the index opts describe. It touches no file.
func Open(opts Options) *Index {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Wait <= 0 {
		opts.Wait = 2 * time.Second
	}
	if opts.Every <= 0 {
		opts.Every = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	x := &Index{opts: opts, store: opts.Store, logger: opts.Logger, ctx: ctx, cancel: cancel}
	if x.store == nil {
		x.files = OpenIndexFiles(opts.Dir)
		x.store = x.files
	}
	return x
}

// ErrClosed is returned by an Index used after Close.
var ErrClosed = errors.New("recall index closed")

// Close stops an update under way, waits for it and closes the embedded
// engine's database.
func (x *Index) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
	if x.files != nil {
		return x.files.Close()
	}
	return nil
}

func (x *Index) isClosed() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closed
}

// Changed tells the index that its sources changed (an archive was
// written): the next search waits for the update that adds it.
func (x *Index) Changed() {
	x.mu.Lock()
	x.dirty = true
	x.mu.Unlock()
}

// refresh keeps the index up to date for a search. When the sources
// changed since the last update (Changed), or none ran in this process
// yet, it starts one if none runs and waits for it at most Wait, so that
// what was just archived is found. Otherwise it starts one in the
// background at most every Every (for what other processes wrote and cold
// memory), and does not wait: an update that finds nothing new still
// lists every conversation file. It reports whether an update was still
// running when it returned.
func (x *Index) refresh(ctx context.Context) (pending bool) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return false
	}
	now := x.opts.Now()
	wait := x.dirty || !x.fresh
	if x.running == nil && (wait || now.Sub(x.last) >= x.opts.Every) {
		x.last, x.dirty = now, false
		done := make(chan struct{})
		x.running = done
		x.wg.Go(func() {
			defer close(done)
			_, err := x.Update(x.ctx)
			if err != nil && !errors.Is(err, ErrBusy) && x.ctx.Err() == nil {
				x.logger.Warn("recall index update failed; searching what it holds", "err", err)
			}
			x.mu.Lock()
			x.running = nil
			x.mu.Unlock()
		})
	}
	running := x.running
	x.mu.Unlock()
	if running == nil {
		return false
	}
	if !wait {
		return true
	}
	t := time.NewTimer(x.opts.Wait)
	defer t.Stop()
	select {
	case <-running:
		return false
	case <-t.C:
		return true
	case <-ctx.Done():
		return true
	}
}
