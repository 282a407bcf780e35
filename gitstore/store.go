package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Subjects of the commits the Store itself makes.
const (
	// InitSubject is the subject of the first commit of a new repository.
	InitSubject = "init: memory store"
	// IgnoreSubject is the subject of the commit that records a .gitignore
	// Open had to extend in an existing repository.
	IgnoreSubject = "init: track memory files in .gitignore"
	// ManualSubject is the subject under which uncommitted edits of tracked
	// files are saved before a restore (Dream uses it too, before its own
	// commit, so a Dream commit shows Dream's changes alone).
	ManualSubject = "manual: edits outside Dream"
	// RevertPrefix starts the subject of a restore commit:
	// "revert: undo <short id>".
	RevertPrefix = "revert: undo "
)

// Defaults for Options.
const (
	DefaultAuthorName  = "dreamgate"
	DefaultAuthorEmail = "dreamgate@localhost"
)

const (
	ignoreFile  = ".gitignore"
	defaultHead = "refs/heads/main"
)

// Options configure a Store. Tracked is required; every other field has a
// default.
type Options struct {
	// Tracked are the workspace-relative, slash-separated files the
	// repository versions: the caller's workspace layout says which (the
	// store itself knows no file names but .gitignore). A new repository
	// gets them as empty files. Names are limited to letters, digits, '.',
	// '_', '-' and '/' so they need no escaping in .gitignore. Empty is
	// ErrNoTrackedFiles.
	Tracked []string
	// Patterns name further files the repository versions whenever they
	// exist (none is created): paths as in Tracked whose segments may hold
	// '*', which matches any name, e.g. "scopes/*/SOUL.md". A file a
	// pattern matches is tracked when each of its names is made of the
	// characters allowed in Tracked, not ".git". A new folder of such files
	// is committed like any change of a tracked file, and a removed one as
	// a removal.
	Patterns []string
	// Files writes the workspace files the Store rewrites: the files a
	// Restore puts back, and .gitignore. The caller passes the workspace's
	// own atomic write so every writer of the workspace shares one; nil
	// writes directly (a temp file, fsync, rename, fsync of the directory).
	Files Files
	// Author signs commits as author and committer. Empty fields default
	// to DefaultAuthorName and DefaultAuthorEmail.
	Author Signature
	// Now stamps commits. Default time.Now.
	Now func() time.Time
	// Logger receives warnings (stale lock removed, .gitignore extended,
	// a damaged branch repaired). Nil discards.
	Logger *slog.Logger
	// AfterWrite, when set, is called right after each ref write reaches
	// the disk, with its kill point's name (PointRefLock, PointRef): the
	// chaos tests stop the process there. Nil in production.
	AfterWrite func(point string)
	// Initial is the content of the files of a new repository's first
	// commit in a database (OpenDB), by path; a tracked file it lacks is
	// empty. A workspace's first commit takes its files.
	Initial map[string][]byte
	// Lines, when set, names a folder each of whose folders has a line of
	// history of its own (lines.go): dreamgate's scopes ("scopes"), so
	// that a scope's commit writes that scope's objects alone. A plain
	// name: letters, digits, '.', '_' and '-'. The patterns name the
	// files of those folders ("scopes/*/SOUL.md"). "" keeps one branch
	// for every tracked file.
	Lines string
}

// Files is how the Store rewrites workspace files. Paths are
// workspace-relative and slash-separated.
type Files interface {
	// WriteFile replaces rel with data atomically (a reader or a crash sees
	// the old content or the new) and durably, with exactly the permission
	// bits perm, creating missing parent directories.
	WriteFile(rel string, data []byte, perm fs.FileMode) error
	// Remove deletes the file rel; a missing file is not an error.
	Remove(rel string) error
}

// Signature names who makes the Store's commits.
type Signature struct{ Name, Email string }

// Store is the memory repository of one workspace. Its methods are safe for
// concurrent use.
type Store struct {
	dir        string   // absolute workspace directory
	gitDir     string   // holds HEAD, index, index.lock
	commonDir  string   // holds the objects, branches and packed-refs (gitDir but for a linked worktree)
	objDir     string   // loose objects and packs: commonDir/objects
	tracked    []string // Options.Tracked, sorted
	patterns   []string // Options.Patterns, sorted
	rules      []rule   // the tracked files' and the patterns' segments
	patRules   []rule   // the patterns' segments
	files      Files
	author     Signature
	now        func() time.Time
	log        *slog.Logger
	afterWrite func(point string) // Options.AfterWrite
	linesDir   string             // Options.Lines
	initial    map[string][]byte  // Options.Initial
	be         backend            // where the repository lives

	mu        sync.Mutex // serialises every method: go-git's storage is not goroutine-safe
	repo      *git.Repository
	packStamp time.Time     // mtime of objects/pack when go-git last listed the packs
	packNames string        // the pack index files it held then
	lockWait  time.Duration // how long to wait for another writer's index.lock
	// packThreshold is PackThreshold; tests lower it.
	packThreshold int
	// idx is the commit index (commitindex.go) as last loaded or made;
	// nil until first used.
	idx *commitIndex
	// refStamp is the backend's stamp of the lines' refs when the index
	// was last checked against them; verified its stamp of every ref then
	// (backend.quickStamp).
	refStamp, verified string
	// decoded are trees read lately, decoded (lines.go, tree); a
	// database's transaction's new ones are not the store's until it
	// commits, so writes drop what they decode (db.go).
	decoded struct {
		trees   map[plumbing.Hash]decodedTree
		entries int
	}
	// legacy are the scope folders of the branch's last commit that held
	// every scope (lines.go), by its id.
	legacy struct {
		id    plumbing.Hash
		lines []line
	}
}

// obj is the object storage of the operation under way.
func (s *Store) obj() storage.Storer { return s.be.objects() }

// Open uses the repository at dir, or creates one there.
//
// A new repository gets a .gitignore that ignores everything except the
// tracked files and itself, the missing tracked files as empty files, and an
// initial commit InitSubject. An existing repository at dir (a .git
// directory, or a .git file of a linked worktree) is adopted: its .gitignore
// gets the missing lines appended (and that change is committed as
// IgnoreSubject); if it has no commit yet, it gets the initial commit.
// A dir with no repository of its own inside another repository (an ancestor
// holding a .git directory or file, also after resolving symlinks) is
// refused with a *NestedRepositoryError and nothing is created.
func Open(dir string, opts Options) (*Store, error) {
	s, err := newStore(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open memory repository: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return nil, fmt.Errorf("open memory repository %s: %w", s.dir, err)
	}
	if n, err := s.removeLeftovers(); err != nil {
		s.log.Warn("memory repository: leftover temp files", "removed", n, "err", err)
	} else if n > 0 {
		s.log.Info("memory repository: removed leftover temp files", "count", n)
	}
	return s, nil
}

func newStore(dir string, opts Options) (*Store, error) {
	abs := "" // no workspace: a database's repository (OpenDB)
	if dir != "" {
		var err error
		if abs, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("workspace path: %w", err)
		}
	}
	if len(opts.Tracked) == 0 {
		return nil, ErrNoTrackedFiles
	}
	tracked, err := cleanTracked(opts.Tracked)
	if err != nil {
		return nil, err
	}
	patterns, err := cleanPatterns(opts.Patterns, tracked)
	if err != nil {
		return nil, err
	}
	s := &Store{
		dir:           abs,
		tracked:       tracked,
		patterns:      patterns,
		files:         opts.Files,
		author:        opts.Author,
		now:           opts.Now,
		log:           opts.Logger,
		afterWrite:    opts.AfterWrite,
		linesDir:      opts.Lines,
		lockWait:      defaultLockWait,
		packThreshold: PackThreshold,
	}
	if s.author.Name == "" {
		s.author.Name = DefaultAuthorName
	}
	if s.author.Email == "" {
		s.author.Email = DefaultAuthorEmail
	}
	if strings.ContainsAny(s.author.Name+s.author.Email, "<>\n") {
		return nil, fmt.Errorf("author %q <%s>: name and email may not contain '<', '>' or newlines",
			s.author.Name, s.author.Email)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.files == nil && abs != "" {
		s.files = dirFiles{dir: abs}
	}
	if err := checkLines(s.linesDir, tracked, patterns); err != nil {
		return nil, err
	}
	s.be = filesBackend{s: s}
	for _, p := range tracked {
		s.rules = append(s.rules, strings.Split(p, "/"))
	}
	for _, p := range patterns {
		s.patRules = append(s.patRules, strings.Split(p, "/"))
	}
	s.rules = append(s.rules, s.patRules...)
	return s, nil
}

// checkLines refuses a lines folder that is no plain name, a fixed tracked
// file in it, and a pattern in it whose second segment is not "*" (each
// of its folders is a line) or that names no file below such a folder.
func checkLines(dir string, tracked, patterns []string) error {
	if dir == "" {
		return nil
	}
	if !validName(dir) || strings.Contains(dir, "*") {
		return fmt.Errorf("lines folder %q: a plain name of letters, digits, '.', '_' and '-'", dir)
	}
	for _, p := range tracked {
		if strings.HasPrefix(p, dir+"/") {
			return fmt.Errorf("tracked path %q: the lines folder %s holds only its folders' patterns", p, dir)
		}
	}
	for _, p := range patterns {
		segs := strings.Split(p, "/")
		if segs[0] == dir && (len(segs) < 3 || segs[1] != "*") {
			return fmt.Errorf("tracked pattern %q: a pattern in the lines folder is %s/*/<file>", p, dir)
		}
	}
	return nil
}

// cleanTracked validates and sorts the tracked paths. The character set is
// narrow on purpose: such names are literal in .gitignore patterns and never
// need quoting in diffs.
func cleanTracked(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, p := range in {
		if err := checkPath(p); err != nil {
			return nil, fmt.Errorf("tracked path %q: %w", p, err)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	for i := 1; i < len(out); i++ {
		if strings.HasPrefix(out[i], out[i-1]+"/") {
			return nil, fmt.Errorf("tracked paths %q and %q: a file cannot also be a directory", out[i-1], out[i])
		}
	}
	return out, nil
}

// checkPath checks one tracked path.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." {
		return errors.New("must be a clean relative path")
	}
	for _, r := range p {
		if !pathChar(r) {
			return errors.New("only letters, digits, '.', '_', '-' and '/' are allowed")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." || strings.EqualFold(seg, ".git") {
			return fmt.Errorf("may not contain %q", seg)
		}
	}
	if p == ignoreFile {
		return errors.New(".gitignore is managed by the store")
	}
	return nil
}

func pathChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '-' || r == '/'
}

func (s *Store) open() error {
	dotGit := filepath.Join(s.dir, ".git")
	if _, err := os.Lstat(dotGit); err == nil {
		return s.adopt(dotGit)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("look for .git: %w", err)
	}
	if err := s.refuseNested(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	// The workspace may be a symlink into someone's repository: check the
	// real location too, now that it exists.
	if err := s.refuseNested(); err != nil {
		return err
	}
	s.gitDir, s.commonDir = dotGit, dotGit
	s.objDir = filepath.Join(dotGit, "objects")
	// go-git writes this first HEAD in place; a kill there leaves an empty
	// HEAD in a repository without objects, which the next Open repairs.
	repo, err := git.PlainInitWithOptions(s.dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.ReferenceName(defaultHead)},
	})
	if err != nil {
		return fmt.Errorf("init repository: %w", err)
	}
	if s.repo, err = s.withRefStorer(repo); err != nil {
		return fmt.Errorf("init repository: %w", err)
	}
	if _, err := s.mergeIgnore(); err != nil {
		return err
	}
	return s.initialCommit()
}

// withRefStorer reopens repo over refStorer, so that every ref go-git
// writes for the Store goes through the atomic write (refs.go).
func (s *Store) withRefStorer(repo *git.Repository) (*git.Repository, error) {
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("unexpected repository storage %T", repo.Storer)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("no worktree: %w", err)
	}
	return git.Open(&refStorer{Storage: st, s: s}, wt.Filesystem)
}

// refuseNested walks the ancestors of the workspace (as given and with
// symlinks resolved) looking for a .git directory or file.
func (s *Store) refuseNested() error {
	starts := []string{s.dir}
	if real, err := filepath.EvalSymlinks(s.dir); err == nil && real != s.dir {
		starts = append(starts, real)
	}
	for _, start := range starts {
		for d := filepath.Dir(start); ; d = filepath.Dir(d) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				return &NestedRepositoryError{Workspace: s.dir, Outer: d}
			}
			if parent := filepath.Dir(d); parent == d {
				break
			}
		}
	}
	return nil
}

// adopt opens the repository already at the workspace.
func (s *Store) adopt(dotGit string) error {
	gitDir, commonDir, err := locateGitDir(s.dir, dotGit)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotARepository, err)
	}
	s.gitDir, s.commonDir = gitDir, commonDir
	s.objDir = filepath.Join(commonDir, "objects")
	// go-git cannot open a repository whose HEAD is empty or missing.
	_, err = s.readRef(plumbing.HEAD)
	var d *refDamage
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		d = &refDamage{name: plumbing.HEAD, problem: "is missing"}
	}
	if d != nil || errors.As(err, &d) {
		d.unreadable = true
		if err := s.repairHEAD(d); err != nil {
			return err
		}
	}
	repo, err := git.PlainOpenWithOptions(s.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotARepository, err)
	}
	if s.repo, err = s.withRefStorer(repo); err != nil {
		return fmt.Errorf("%w: %w", ErrNotARepository, err)
	}

	added, err := s.mergeIgnore()
	if err != nil {
		return err
	}
	head, err := s.head()
	if err != nil {
		return err
	}
	if head.commit == nil {
		// head found no commit object at all (a branch that is missing or
		// damaged in a repository with commits is repaired, or an error):
		// nothing is left dangling by starting the history here.
		return s.initialCommit()
	}
	if err := s.splitLines(); err != nil {
		return fmt.Errorf("give each scope a line of history: %w", err)
	}
	if len(added) > 0 {
		files, err := s.newlyTracked()
		if err != nil {
			return err
		}
		_, err = s.lockedCommit(append([]string{ignoreFile}, files...), IgnoreSubject,
			"Track only the memory files: "+strings.Join(append(slices.Clone(s.tracked), s.patterns...), ", ")+".")
		if err != nil && !errors.Is(err, ErrNothingToCommit) {
			return fmt.Errorf("commit .gitignore: %w", err)
		}
		s.log.Warn("memory repository: extended .gitignore of an existing repository to track more files",
			"dir", s.dir, "lines", strings.Join(added, " "), "committed", len(files))
	}
	return nil
}

// lock takes the Store's mutex and returns its release; every method but
// Open starts with `defer s.lock()()`.
func (s *Store) lock() (unlock func()) {
	s.mu.Lock()
	if !s.bare() {
		s.refresh()
	}
	return s.mu.Unlock
}

// bare reports a repository without a workspace: kept in a database
// (OpenDB), its files are read from its commits alone.
func (s *Store) bare() bool { return s.dir == "" }

// refresh makes go-git list the packs again when the pack directory changed
// since it last did: go-git remembers the pack list forever, so after a
// `git gc` (the git command line runs one on its own now and then) or
// another process packing objects, objects that moved from loose files into
// a new pack would otherwise be "not found". One stat per operation, and
// a listing when the folder changed: go-git writes every loose object
// through a temporary file there, so the folder changes at each commit,
// and only a change of its packs makes go-git read their indexes again
// (which costs a commit milliseconds per 10,000 objects packed).
func (s *Store) refresh() {
	dir := filepath.Join(s.objDir, "pack")
	fi, err := os.Stat(dir)
	if err != nil {
		return
	}
	if fi.ModTime().Equal(s.packStamp) {
		return
	}
	s.packStamp = fi.ModTime()
	names := packIndexes(dir)
	if names == s.packNames && names != "" {
		return
	}
	s.packNames = names
	if r, ok := s.obj().(interface{ Reindex() }); ok {
		r.Reindex()
	}
}

// packIndexes lists the pack index files of dir, with their sizes and
// times, as one string ("" when it cannot be read: then go-git lists
// the packs again).
func packIndexes(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".idx") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return ""
		}
		fmt.Fprintf(&b, "%s %d %d;", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// Dir is the absolute workspace directory.
func (s *Store) Dir() string { return s.dir }

// Tracked returns the fixed tracked paths (Options.Tracked), sorted.
func (s *Store) Tracked() []string { return slices.Clone(s.tracked) }

// dirFiles is the Files of a Store opened without one: direct writes in
// the workspace directory.
type dirFiles struct{ dir string }

func (d dirFiles) path(rel string) string { return filepath.Join(d.dir, filepath.FromSlash(rel)) }

func (d dirFiles) Remove(rel string) error {
	if err := os.Remove(d.path(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// WriteFile replaces rel through a temporary file in the same directory,
// synced before the rename, and syncs the directory after it, so a crash
// leaves the old or the new content and never a torn file.
func (d dirFiles) WriteFile(rel string, data []byte, perm fs.FileMode) (err error) {
	p := d.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Chmod(perm); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, p); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(p))
	if err != nil {
		return nil // the content is in place; only its durability is unconfirmed
	}
	defer dir.Close()
	_ = dir.Sync()
	return nil
}
