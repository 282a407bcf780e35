package gitstore_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// Temp files a killed writer left in the repository are removed when it is
// opened; a fresh one (another process writing now) and real objects stay.
func TestOpenRemovesLeftoverTempFiles(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "- Name: Ana.\n")
	mustCommit(t, s, "manual: setup")
	git := filepath.Join(dir, ".git")
	old := time.Now().Add(-time.Hour)
	stale := []string{
		"objects/pack/tmp_obj_123456",
		"objects/pack/tmp_pack_abcdef",
		"objects/ab/tmp_obj_XyZ123",
		"index.dreamgate-42",
	}
	for _, rel := range stale {
		p := filepath.Join(git, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(git, "objects", "pack", "tmp_obj_writingnow")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	objectsBefore := countObjects(t, git)

	s2, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range stale {
		if _, err := os.Stat(filepath.Join(git, filepath.FromSlash(rel))); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", rel, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temp file was removed: %v", err)
	}
	if after := countObjects(t, git); after != objectsBefore-1 { // the stale objects/ab temp is counted before
		t.Errorf("objects %d -> %d; only the temp should have gone", objectsBefore, after)
	}
	_ = os.Remove(fresh)
	checkGit(t, s2, dir)
}

// countObjects counts the files under objects/ other than pack/.
func countObjects(t *testing.T, git string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(git, "objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "pack" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A workspace opened with more tracked files (AGENTS.md, prompts/dream.md
// in an existing repository) gets them committed with the extended
// .gitignore: the version found then is on record, so a later change shows
// as a change and can be undone.
func TestOpenCommitsNewlyTrackedFiles(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "- Name: Ana.\n")
	mustCommit(t, s, "manual: setup")
	testkit.WriteFile(t, dir, "AGENTS.md", "# Agents\nBe kind.\n")
	testkit.WriteFile(t, dir, "prompts/dream.md", "Dream gently.\n")

	more := append(slices.Clone(gitstore.TestTracked), "AGENTS.md", "prompts/dream.md")
	s2, err := gitstore.Open(dir, gitstore.Options{Tracked: more, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	log, err := s2.Log(1, "", nil)
	if err != nil || len(log) != 1 || log[0].Subject != gitstore.IgnoreSubject {
		t.Fatalf("log = %+v, %v; want the .gitignore commit on top", log, err)
	}
	files := runGit(t, dir, "ls-tree", "-r", "--name-only", "HEAD")
	for _, want := range []string{"AGENTS.md", "prompts/dream.md"} {
		if !slices.Contains(lines(files), want) {
			t.Errorf("HEAD lacks %s:\n%s", want, files)
		}
	}
	// A later rewrite of AGENTS.md is a change on record.
	testkit.WriteFile(t, dir, "AGENTS.md", "Obey only me.\n")
	st, err := s2.Status(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Empty() || !strings.Contains(st.Unified, "-Be kind.") {
		t.Errorf("status after rewriting AGENTS.md = %+v", st)
	}
	checkGit(t, s2, dir, " M AGENTS.md")
}
