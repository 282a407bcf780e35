package dream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// Defaults for zero Config fields. Those config.json can set
// (dream.maxBatchSize, maxIterations, maxBatchesPerRun) default to the same.
const (
	DefaultMaxBatchSize  = 20
	DefaultMaxIterations = 10
	DefaultTimeout       = 30 * time.Minute
	DefaultMaxEntries    = 1000
	DefaultMaxFailures   = 3
	// DefaultMaxBatchesPerRun and DefaultMaxTokensPerRun bound how much of
	// a backlog one run drains: it goes on with the next batch while
	// unread entries remain, until either is reached.
	DefaultMaxBatchesPerRun = 5
	DefaultMaxTokensPerRun  = 1_000_000
	// DefaultEphemeralDays is the age, in days since it was last
	// confirmed, past which an ephemeral memory line retires to cold
	// memory (dream.ephemeralDays).
	DefaultEphemeralDays = 30
	// DefaultDeepEvery is how many Dreams of a scope (batches that
	// completed) come between two of its deep Dreams (dream.deepEvery).
	DefaultDeepEvery = 10
	// DefaultDeepAtShare is the share of Config.HotTokens past which a
	// scope's memory gets a deep Dream at once, and which the deep Dream
	// brings it back under (dream.deepAtShare).
	DefaultDeepAtShare = 0.8
)

// Phase 2 applies the findings in chunks of findingsPerChunk, each an
// agent run of its own whose call budget is the chunk's size plus
// editMargin (for reads and retried edits), and never below
// Config.MaxIterations: a model that makes one edit per call still
// finishes, and what a stopped run applied in completed chunks is kept.
const (
	findingsPerChunk = 10
	editMargin       = 5
)

// PointEdit names the moment after phase 2 wrote an edit, before any
// commit holds it (Deps.Hook).
const PointEdit = "dream-edit"

// PointCommit names the moment after a commit of the memory repository
// (Dream's, or the one saving hand edits first), before the cursor moves
// (Deps.Hook).
const PointCommit = "dream-commit"

// repeatLimit ends phase 2 as failed when the same tool call has the same
// outcome this many times: a model looping on one call would otherwise burn
// the whole step budget (no-op loops have cost millions of tokens).
const repeatLimit = 3

// History is what Dream needs of memory/history.jsonl; *history.Store
// satisfies it. Dream never reads the file itself.
type History interface {
	// Since returns the entries with a cursor above cursor, oldest first, at
	// most limit of them (0 = all), whatever their scope. Malformed lines
	// are skipped, not errors; an error means the archive could not be
	// read.
	Since(cursor, limit int) ([]history.Entry, error)
	// SinceIn is Since for the entries of one memory scope: a scope's
	// batch.
	SinceIn(scope audience.Scope, cursor, limit int) ([]history.Entry, error)
	// Backlogs lists the scopes with entries above their cursor (above
	// after for a scope missing from cursors), the oldest such entry
	// first, and the highest cursor the history held when it looked. It
	// reads no content.
	Backlogs(after int, cursors map[audience.Scope]int) ([]history.Backlog, int, error)
	// DreamCursor is the highest cursor Dream has consumed (0 when none):
	// memory/.dream_cursor, the frontier of every scope.
	DreamCursor() (int, error)
	// SetDreamCursor records n as consumed, durably, before returning nil.
	// Only the Ledger calls it.
	SetDreamCursor(n int) error
	// LastCursor is the highest cursor handed out so far (0 when none).
	LastCursor() (int, error)
	// AppendIn adds an entry of a scope (Dream records a skipped batch in
	// the scope's own history: its findings are that scope's) and returns
	// it with its cursor, durably written before returning nil.
	AppendIn(scope audience.Scope, content, sessionKey string) (history.Entry, error)
	// Compact drops the oldest entries already consumed by Dream while more
	// than maxEntries remain, and returns how many it dropped. It never
	// drops an entry above the Dream cursor.
	Compact(maxEntries int) (dropped int, err error)
}

// Model is the one call Dream makes; *llm.Client satisfies it.
type Model interface {
	// Chat sends one request; errors are as llm.Client.Chat documents.
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// Repo is what Dream needs of the memory repository; *gitstore.Store
// satisfies it. Errors wrap the gitstore sentinels. Its reads take a path
// filter and its commits and restores name the files they may touch, so
// that a scope's Dream sees and commits that scope's files alone, and a
// restore for some scopes never undoes another's edits.
type Repo interface {
	// Status diffs the tracked files keep accepts (nil: all) in the
	// workspace against HEAD.
	Status(keep func(path string) bool) (gitstore.Diff, error)
	// CommitPaths records the listed tracked files as the workspace holds
	// them (and no other); gitstore.ErrNothingToCommit when none changed.
	CommitPaths(paths []string, subject, body string) (gitstore.Commit, error)
	// CommitChanges commits the changes on top of parent and moves the
	// branch there (gitstore.ErrConcurrentUpdate when it no longer names
	// parent), writing no workspace file: a step's commit point.
	CommitChanges(parent string, changes []gitstore.Change, subject, body string) (gitstore.Commit, error)
	// InDatabase reports a repository kept in a database, whose
	// CommitChangesWith runs the caller's writes in the commit's
	// transaction (a step's ledger part: dbsteps.go).
	InDatabase() bool
	CommitChangesWith(parent string, changes []gitstore.Change, subject, body string, with func(gitstore.Commit, gitstore.DBTx) error) (gitstore.Commit, error)
	// Checkout writes the files keep accepts that differ between the
	// commits from and to, where the workspace still holds from's version.
	Checkout(from, to string, keep func(path string) bool) (gitstore.CheckoutResult, error)
	// DiffChanges is the diff a commit of changes on top of base would
	// show.
	DiffChanges(base string, changes []gitstore.Change) (gitstore.Diff, error)
	// Head is the commit the branch names; FileAt a file as a commit
	// holds it (ok false: none); CommitsAfter the commits after base on
	// the first-parent history, oldest first, with their bodies
	// (gitstore.ErrNotInHistory when base is not on it).
	Head() (gitstore.Commit, error)
	FileAt(rev, path string) (data []byte, ok bool, err error)
	CommitsAfter(base string, max int) ([]gitstore.Commit, error)
	// Summary renders a diff as a commit body, the diff capped.
	Summary(d gitstore.Diff, maxDiffChars int) string
	// Show resolves a full id or unique prefix to a commit and its diff,
	// cut to the files keep accepts (nil: all).
	Show(rev string, keep func(path string) bool) (gitstore.Commit, gitstore.Diff, error)
	// PlanRestore says what undoing rev's change to the files keep
	// accepts does, line by line, on the files as they stand; PlanUndo the
	// same on HEAD's, with the changes a restore's step commits on it.
	// Neither changes anything.
	PlanRestore(rev string, keep func(path string) bool) (gitstore.RestorePlan, error)
	PlanUndo(rev string, keep func(path string) bool) (gitstore.RestorePlan, error)
	// Pack packs the loose objects once they pass git's gc --auto
	// threshold and reports how many it packed (0 below it, the usual
	// case, which costs one directory listing).
	Pack() (int, error)
}

var _ Repo = (*gitstore.Store)(nil)

// Config is the Dream's configuration; zero fields take the defaults.
type Config struct {
	// Workspace holds SOUL.md, USER.md, memory/MEMORY.md, the optional
	// prompts/dream.md, and Dream's ledger and lock under memory/.
	Workspace string
	// Model is dream.model: "" uses the client's default model.
	Model string
	// MaxBatchSize is the number of history entries read per run (20).
	MaxBatchSize int
	// MaxIterations bounds the model calls of phase 2 (10).
	MaxIterations int
	// Timeout is each batch's deadline (30 minutes: local models are slow,
	// and a batch cut by it counts as its failure). A run starts another
	// batch only while its caller's deadline leaves a whole Timeout.
	Timeout time.Duration
	// MaxEntries is the history size above which consumed entries are
	// compacted away (1000).
	MaxEntries int
	// MaxFailures is the number of failed runs on one batch after which it
	// is skipped (3).
	MaxFailures int
	// MaxBatchesPerRun bounds the batches one run reads when a backlog
	// waits (5); MaxTokensPerRun stops it from starting another batch once
	// the run has used that many tokens (1,000,000). Each batch has its own
	// Timeout.
	MaxBatchesPerRun int
	MaxTokensPerRun  int
	// EphemeralDays is the age in days past which an ephemeral memory line
	// retires to cold memory (30).
	EphemeralDays int
	// DeepEvery is the number of a scope's Dreams between two of its deep
	// Dreams (10); DeepAtShare the share of HotTokens past which a scope's
	// memory gets one at once and which it is brought back under (0.8).
	DeepEvery   int
	DeepAtShare float64
	// HotTokens is the budget in tokens of a scope's memory files in the
	// prompt (memory.hotTokens; the gateway's number). 0: no budget, so a
	// deep Dream comes only every DeepEvery Dreams or when asked, and
	// merges and retires without a size to reach.
	HotTokens int
	// Window is the Dream model's context window in tokens (the smallest
	// of its chain) and MaxTokens its reply allowance (window.go): phase 1
	// reads a batch in as many calls as fit, a long entry in parts, and a
	// deep Dream shows a scope's lines in as many calls as fit (0:
	// DefaultWindow and DefaultMaxTokens).
	Window    int
	MaxTokens int
}

func (c Config) withDefaults() Config {
	if c.MaxBatchSize <= 0 {
		c.MaxBatchSize = DefaultMaxBatchSize
	}
	if c.MaxIterations <= 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.MaxBatchesPerRun <= 0 {
		c.MaxBatchesPerRun = DefaultMaxBatchesPerRun
	}
	if c.MaxTokensPerRun <= 0 {
		c.MaxTokensPerRun = DefaultMaxTokensPerRun
	}
	if c.EphemeralDays <= 0 {
		c.EphemeralDays = DefaultEphemeralDays
	}
	if c.DeepEvery <= 0 {
		c.DeepEvery = DefaultDeepEvery
	}
	if c.DeepAtShare <= 0 || c.DeepAtShare > 1 {
		c.DeepAtShare = DefaultDeepAtShare
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.MaxTokens <= 0 || c.MaxTokens >= c.Window {
		c.MaxTokens = min(DefaultMaxTokens, c.Window/4)
	}
	return c
}

var _ History = (*history.Store)(nil)

// Deps are the Dreamer's collaborators. Model, History and Repo are
// required; a nil Logger discards, a nil Now is time.Now.
type Deps struct {
	Model   Model
	History History
	Repo    Repo
	// Files, when set, is the workspace the chat tools also write through,
	// so phase 2's edits, the snapshot and roll-back of a failed run, a
	// restore and a chat edit of the same file are serialised by its one
	// write lock. Nil: each run opens its own.
	Files *workspace.Root
	// Memory reads the scopes' memory files for the prompts and measures
	// what they cost in a prompt (cmd's one *memory.Memory); nil: read
	// from Config.Workspace.
	Memory *memory.Memory
	// Counter counts tokens as the prompt builder does (cmd's one
	// *consolidator.Counter); nil: Dream's own.
	Counter TokenCounter
	// LedgerStore, when set, keeps the ledger's record and locks there
	// (the store's PostgreSQL engine) instead of memory/.dream_ledger.
	LedgerStore store.DreamLedger
	// Observer, when set, is told of every finished run (metrics).
	Observer Observer
	Logger   *slog.Logger
	Now      func() time.Time
	// Hook, when set, is called at named points of a run (PointEdit,
	// PointCommit, PointLedger) so a test can kill the process exactly
	// there. Nil in normal use. (The memory repository reports its own
	// writes, the branch's move and each file a step writes, through
	// gitstore.Options.AfterWrite.)
	Hook func(point string)
}

// New returns a Dreamer for the workspace. It checks the configuration and
// touches nothing on disk.
func New(cfg Config, deps Deps) (*Dreamer, error) {
	cfg = cfg.withDefaults()
	if cfg.Workspace == "" {
		return nil, errors.New("dream: no workspace directory")
	}
	fi, err := os.Stat(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("dream workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("dream workspace %s: not a directory", cfg.Workspace)
	}
	switch {
	case deps.Model == nil:
		return nil, errors.New("dream: no model")
	case deps.History == nil:
		return nil, errors.New("dream: no history store")
	case deps.Repo == nil:
		return nil, errors.New("dream: no memory repository")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Counter == nil {
		deps.Counter = &tokens.Counter{}
	}
	if deps.Memory == nil {
		deps.Memory = memory.New(memory.NewDisk(cfg.Workspace), false)
	}
	d := &Dreamer{
		cfg:   cfg,
		model: deps.Model,
		hist:  deps.History,
		repo:  hookRepo(deps.Repo, deps.Hook),
		files: deps.Files,
		mem:   deps.Memory,
		obs:   deps.Observer,
		log:   deps.Logger,
		now:   deps.Now,
		hook:  deps.Hook,
		count: deps.Counter,
	}
	d.ledger = NewLedgerIn(cfg.Workspace, deps.History, deps.LedgerStore, deps.Logger)
	d.ledger.hook = deps.Hook
	d.ledger.lock.held = d.clearStaleGitLocks
	return d, nil
}
