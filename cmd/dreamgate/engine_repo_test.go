package main

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// On the PostgreSQL engine the memory repository is the database's: the
// tests read memory files, and run git, through these.

// dbRepoOptions open a database's memory repository as the binary does.
func dbRepoOptions() gitstore.Options {
	return gitstore.Options{Tracked: workspace.TrackedFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir}
}

// pgRepo opens the memory repository of ws's harness's database; ok is
// false on the embedded engine. done closes the database.
func pgRepo(ws string) (repo *gitstore.Store, done func(), ok bool, err error) {
	dsn, found := pgWorkspaces.Load(ws)
	if !found {
		return nil, nil, false, nil
	}
	db, err := postgres.Open(context.Background(), dsn.(string), postgres.Options{})
	if err != nil {
		return nil, nil, true, err
	}
	repo, err = gitstore.OpenDB(db.Repository(), dbRepoOptions())
	if err != nil {
		db.Close()
		return nil, nil, true, err
	}
	return repo, db.Close, true, nil
}

// memoryRepoDir is the folder git reads ws's memory repository in: the
// workspace, or on the PostgreSQL engine a workspace exported from the
// database beside it, made anew at each call (exported is true).
func memoryRepoDir(ws string) (dir string, exported bool, err error) {
	repo, done, ok, err := pgRepo(ws)
	if !ok || err != nil {
		return ws, false, err
	}
	defer done()
	dir, err = os.MkdirTemp(filepath.Dir(ws), "exported-")
	if err != nil {
		return "", true, err
	}
	if _, err := repo.Export(dir, dbRepoOptions()); err != nil {
		return "", true, err
	}
	return dir, true, nil
}

// readMemoryFile is ws's memory file rel (workspace-relative) as memory
// holds it: the workspace's file, or the newest commit of its line in
// the database. A missing file reads as empty.
func readMemoryFile(t *testing.T, ws, rel string) []byte {
	t.Helper()
	repo, done, ok, err := pgRepo(ws)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	defer done()
	dir := ""
	if s, ok := audience.ScopeOfPath(rel); ok && s != audience.Default {
		dir = s.Dir()
	}
	head, _, err := repo.LineHead(dir)
	if err != nil || head == "" {
		return nil
	}
	b, _, err := repo.FileAt(head, path.Clean(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeMemory sets scope s's memory file rel to text before a test's
// gateway starts: the workspace's file, or on the PostgreSQL engine a hand
// edit committed to the database with `dreamgate memory edit`.
func writeMemory(t *testing.T, h *harness, s audience.Scope, rel, text string) {
	t.Helper()
	if _, ok := pgWorkspaces.Load(h.ws); !ok {
		testkit.WriteFile(t, h.ws, path.Join(s.Dir(), rel), text)
		return
	}
	from := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(from, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("memory", "edit", "--scope", memory.Name(s), "--from", from, rel); r.code != 0 {
		t.Fatalf("memory edit of %s: exit %d\n%s%s", path.Join(s.Dir(), rel), r.code, r.stdout, r.stderr)
	}
}
