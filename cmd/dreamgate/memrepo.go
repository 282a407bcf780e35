package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// The memory repository follows the program state: with store.postgres it
// is kept in the database (gitstore.OpenDB over postgres.Repository), so
// that every process reads and commits the same memory without a shared
// file system. Its files are then read from the commits
// (memory.Committed), never from the workspace folder, which keeps the
// instructions (AGENTS.md, prompts/dream.md) and Dream's working copy:
// before a turn's file tools may read a scope's memory files, they are
// written there from the commits (copyMemory), and the tools may not
// write them — a person edits memory with `dreamgate memory edit`.

// openDBRepo opens the memory repository in db, made on first use with the
// workspace's own tracked files (the template's, for a new workspace) as
// its first commit. A workspace whose own repository holds a history the
// database lacks is refused until it is moved in (dreamgate migrate
// --to-postgres): starting without it would begin a second history the
// first could no longer be copied into.
func openDBRepo(cfg Config, db *postgres.DB, ws *workspace.Root, logger *slog.Logger, afterWrite func(string)) (*gitstore.Store, error) {
	if err := workspaceHistoryHeld(cfg.Workspace, db); err != nil {
		return nil, err
	}
	opts := repoOptions(ws, logger, afterWrite)
	opts.Files = nil
	opts.Initial = map[string][]byte{}
	for _, p := range append(slices.Clone(opts.Tracked), memory.Cold) {
		if b, err := os.ReadFile(filepath.Join(cfg.Workspace, filepath.FromSlash(p))); err == nil {
			opts.Initial[p] = b
		}
	}
	r, err := gitstore.OpenDB(db.Repository(), opts)
	if err != nil {
		return nil, fmt.Errorf("open the memory repository in PostgreSQL: %w", err)
	}
	return r, nil
}

// workspaceHistoryHeld refuses a workspace whose own repository (.git)
// holds commits the database's memory repository lacks: an empty database
// (its first process would begin a second history), or one another
// workspace began, whose process would leave this workspace's history
// behind unseen. A workspace migrated in, whose commits the database
// holds, goes on.
func workspaceHistoryHeld(workspace string, db *postgres.DB) error {
	gitDir := filepath.Join(workspace, ".git")
	if _, err := os.Stat(gitDir); err != nil {
		return nil
	}
	if db.RepositoryEmpty() {
		return fmt.Errorf("the workspace %s has a memory history (.git) that the PostgreSQL database does not hold yet: run dreamgate migrate --to-postgres first, which copies it in", workspace)
	}
	lacks, err := gitstore.DBLacks(db.Repository(), workspace)
	if err != nil {
		return fmt.Errorf("compare the workspace's memory history (%s) with the database's: %w", gitDir, err)
	}
	if len(lacks) > 0 {
		return fmt.Errorf("the workspace %s has a memory history (.git, %s first) that the PostgreSQL database does not hold: run dreamgate migrate --to-postgres first, which copies it in, or move the .git folder aside if that history is not to be kept", workspace, lacks[0])
	}
	return nil
}

// memoryOn is the memory of the engine in use: read from the workspace's
// files, or from the memory repository in db. repo is the repository the
// database's memory reads (nil on files).
func memoryOn(cfg Config, db *postgres.DB, logger *slog.Logger) (mem *memory.Memory, repo *gitstore.Store, err error) {
	if db == nil {
		return memoryOf(cfg).WithLogger(logger), nil, nil
	}
	ws, err := workspace.Open(cfg.Workspace)
	if err != nil {
		return nil, nil, fmt.Errorf("open workspace: %w", err)
	}
	defer ws.Close()
	if repo, err = openDBRepo(cfg, db, ws, logger, nil); err != nil {
		return nil, nil, err
	}
	return memory.New(memory.NewCommitted(repo), !cfg.Memory.Scoped).WithLogger(logger), repo, nil
}

// memoryFilesDenied are the paths the chat file tools may not write when
// memory is kept in the database: the workspace's and every scope
// folder's memory files (relative to the workspace, or with scope set, to
// a scope's folder).
func memoryFilesDenied(scope bool) []string {
	var out []string
	for _, rel := range memory.TierFiles() {
		out = append(out, rel)
		if !scope {
			out = append(out, path.Join(audience.ScopesDir, "*", rel))
		}
	}
	return out
}

// isMemoryFile reports whether the workspace-relative rel is one of the
// workspace's or a scope folder's memory files.
func isMemoryFile(rel string) bool {
	for _, pat := range memoryFilesDenied(false) {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
	}
	return false
}

// chatPolicies are the chat file tools' policies (people who are not
// admins, admins) for the engine in use.
func chatPolicies(db *postgres.DB) (guest, admin agent.Policy) {
	guest, admin = agent.ChatGuestPolicy(), agent.ChatPolicy()
	if db != nil {
		guest.DenyWrite = append(guest.DenyWrite, memoryFilesDenied(false)...)
		admin.DenyWrite = append(admin.DenyWrite, memoryFilesDenied(false)...)
	}
	return guest, admin
}

// scopeFolders are the scope folders' file tools, without their memory
// files when memory is the database's.
func (a *app) scopeFolders() gateway.ScopeFolders {
	f := gateway.ScopeFolders{Root: a.ws}
	if a.db != nil {
		f.DenyWrite = memoryFilesDenied(true)
	}
	return f
}

// memoryCopy is the gateway's MemoryCopy: nil on files, where the
// folder's files are the memory.
func (a *app) memoryCopy() func(audience.Scope) error {
	if a.db == nil {
		return nil
	}
	return a.copyMemory
}

// copyMemory writes scope's memory files into its folder as memory holds
// them (the commits of the repository in the database), removing one it
// does not hold: the chat file tools read them there.
func (a *app) copyMemory(scope audience.Scope) error {
	for _, rel := range memory.TierFiles() {
		p := path.Join(scope.Dir(), rel)
		data, err := a.mem.Read(scope, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := a.ws.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if now, err := a.ws.ReadFile(p); err == nil && bytes.Equal(now, data) {
			continue
		}
		if err := a.ws.WriteFile(p, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// migrateRepository copies the workspace's memory repository into db's
// (dreamgate migrate --to-postgres): every commit and each line's ref,
// the same commits, so the ledger's and the people's commit ids hold.
// Again, nothing. It says what it did in a sentence.
func migrateRepository(cfg Config, db *postgres.DB, logger *slog.Logger) (string, error) {
	ws, err := workspace.Open(cfg.Workspace)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer ws.Close()
	repo, err := gitstore.Open(cfg.Workspace, repoOptions(ws, logger, nil))
	if err != nil {
		return "", fmt.Errorf("open the workspace's memory repository: %w", err)
	}
	res, err := gitstore.CopyToDB(db.Repository(), repo)
	if errors.Is(err, gitstore.ErrDiverged) {
		return "", fmt.Errorf("the memory repository in PostgreSQL has commits the workspace's lacks, and the workspace's has some it lacks: nothing was copied (%w); export the database's (dreamgate export) and compare", err)
	}
	if err != nil {
		return "", fmt.Errorf("copy the memory repository: %w", err)
	}
	if res.Objects == 0 && len(res.Moved) == 0 {
		return "Memory repository: nothing to copy, its history is there already.", nil
	}
	s := fmt.Sprintf("Memory repository: %s and %s copied into PostgreSQL.", plural(res.Objects, "object", "objects"), plural(len(res.Moved), "ref", "refs"))
	if len(res.Kept) > 0 {
		s += fmt.Sprintf(" %s further on there kept as they are.", plural(len(res.Kept), "ref", "refs"))
	}
	return s, nil
}

// exportRepository writes db's memory repository into the workspace at
// dir (dreamgate export): a git repository with every scope's history and
// the files of each scope's newest commit.
func exportRepository(cfg Config, db *postgres.DB, dir string, logger *slog.Logger) (string, error) {
	ws, err := workspace.Open(dir)
	if err != nil {
		return "", fmt.Errorf("open the exported workspace: %w", err)
	}
	defer ws.Close()
	src, err := gitstore.OpenDB(db.Repository(), repoOptions(ws, logger, nil))
	if err != nil {
		return "", fmt.Errorf("open the memory repository in PostgreSQL: %w", err)
	}
	out, err := src.Export(dir, repoOptions(ws, logger, nil))
	if err != nil {
		return "", err
	}
	n, err := out.Log(0, "", nil)
	if err != nil {
		return "", err
	}
	lines, err := out.LineDirs()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Memory repository: %s on %s exported with the files of each (git log --all in %s shows them).",
		plural(len(n), "commit", "commits"), plural(len(lines)+1, "line", "lines"), dir), nil
}
