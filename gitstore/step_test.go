package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// A step's commit is made before its files are written: CommitChanges
// moves the branch and leaves the workspace alone; Checkout then writes
// the files that still hold the parent's version, and keeps a file edited
// meanwhile.
func TestCommitChangesThenCheckout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Patterns: gitstore.TestPatterns, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "- Ana\n")
	testkit.WriteFile(t, dir, "SOUL.md", "be kind\n")
	base := mustCommit(t, s, "manual: edits outside Dream")

	c, err := s.CommitChanges(base.SHA, []gitstore.Change{
		{Path: "USER.md", Data: []byte("- Ana\n- Ben\n")},
		{Path: "memory/MEMORY.md", Data: []byte("- ships on Fridays\n")},
		{Path: "SOUL.md", Remove: true},
		{Path: "scopes/team-a/USER.md", Data: []byte("- the team\n")},
	}, "dream: 3 changes", "body")
	if err != nil {
		t.Fatal(err)
	}
	if c.Parent != base.SHA {
		t.Errorf("parent = %s, want %s", c.Parent, base.SHA)
	}
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "- Ana\n" {
		t.Errorf("USER.md before the checkout = %q: CommitChanges wrote the workspace", got)
	}
	if head, err := s.Head(); err != nil || head.SHA != c.SHA {
		t.Errorf("Head = %+v, %v", head, err)
	}
	if data, ok, err := s.FileAt(c.SHA, "scopes/team-a/USER.md"); err != nil || !ok || string(data) != "- the team\n" {
		t.Errorf("FileAt = %q %v %v", data, ok, err)
	}
	if _, ok, err := s.FileAt(c.SHA, "SOUL.md"); err != nil || ok {
		t.Errorf("FileAt of a removed file = %v %v", ok, err)
	}
	// The git command line sees the workspace behind the commit.
	checkGit(t, s, dir, " M USER.md", " M memory/MEMORY.md", " D scopes/team-a/USER.md", "?? SOUL.md")

	// A hand edit of memory/MEMORY.md made in between is kept.
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- by hand\n")
	res, err := s.Checkout(base.SHA, c.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SOUL.md", "USER.md", "scopes/team-a/USER.md"}; !slices.Equal(res.Written, want) {
		t.Errorf("written = %q, want %q", res.Written, want)
	}
	if want := []string{"memory/MEMORY.md"}; !slices.Equal(res.Kept, want) {
		t.Errorf("kept = %q, want %q", res.Kept, want)
	}
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "- Ana\n- Ben\n" {
		t.Errorf("USER.md = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "SOUL.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SOUL.md not removed: %v", err)
	}
	if got := testkit.ReadFile(t, dir, "memory/MEMORY.md"); got != "- by hand\n" {
		t.Errorf("the hand edit was overwritten: %q", got)
	}
	checkGit(t, s, dir, " M memory/MEMORY.md")

	// Again: nothing left to write, the hand edit still kept.
	res, err = s.Checkout(base.SHA, c.SHA, nil)
	if err != nil || len(res.Written) != 0 || !slices.Equal(res.Kept, []string{"memory/MEMORY.md"}) {
		t.Errorf("second checkout = %+v, %v", res, err)
	}
}

func TestCommitChangesRefusals(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "- Ana\n")
	base := mustCommit(t, s, "manual: edits outside Dream")
	if _, err := s.CommitChanges(base.SHA, []gitstore.Change{{Path: "USER.md", Data: []byte("- Ana\n")}}, "dream: x", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Errorf("same content: %v, want ErrNothingToCommit", err)
	}
	if _, err := s.CommitChanges(base.SHA, []gitstore.Change{{Path: "notes.md", Data: []byte("x")}}, "dream: x", ""); !errors.Is(err, gitstore.ErrNotTracked) {
		t.Errorf("untracked path: %v, want ErrNotTracked", err)
	}
	next, err := s.CommitChanges("", []gitstore.Change{{Path: "USER.md", Data: []byte("- Ben\n")}}, "dream: y", "")
	if err != nil {
		t.Fatal(err)
	}
	// Built on base, which is no longer HEAD: refused, nothing committed.
	if _, err := s.CommitChanges(base.SHA, []gitstore.Change{{Path: "USER.md", Data: []byte("- Cy\n")}}, "dream: z", ""); !errors.Is(err, gitstore.ErrConcurrentUpdate) {
		t.Errorf("stale parent: %v, want ErrConcurrentUpdate", err)
	}
	if head, _ := s.Head(); head.SHA != next.SHA {
		t.Errorf("HEAD moved to %s", head.Short)
	}
	after, err := s.CommitsAfter(base.SHA, 0)
	if err != nil || len(after) != 1 || after[0].SHA != next.SHA || after[0].Subject != "dream: y" {
		t.Errorf("CommitsAfter = %+v, %v", after, err)
	}
	if after, err := s.CommitsAfter(next.SHA, 0); err != nil || len(after) != 0 {
		t.Errorf("CommitsAfter(HEAD) = %+v, %v", after, err)
	}
	if _, err := s.CommitsAfter("0123456789012345678901234567890123456789", 0); !errors.Is(err, gitstore.ErrNotInHistory) {
		t.Errorf("CommitsAfter of an unknown commit: %v", err)
	}
}

// Checkout keeps a file's permission bits, reports each write to the
// kill hook, and never follows a link in the workspace.
func TestCheckoutWritesAsTheWorkspaceDoes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	var points []string
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now,
		AfterWrite: func(p string) { points = append(points, p) }})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "- Ana\n")
	if err := os.Chmod(filepath.Join(dir, "USER.md"), 0o640); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.md")
	testkit.WriteFile(t, filepath.Dir(outside), "secret.md", "secret\n")
	base := mustCommit(t, s, "manual: edits outside Dream")
	if err := os.Symlink(outside, filepath.Join(dir, "SOUL.md")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	c, err := s.CommitChanges(base.SHA, []gitstore.Change{
		{Path: "USER.md", Data: []byte("- Ana\n- Ben\n")},
		{Path: "SOUL.md", Data: []byte("pwned\n")},
	}, "dream: 2 changes", "")
	if err != nil {
		t.Fatal(err)
	}
	points = nil
	res, err := s.Checkout(base.SHA, c.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Written, []string{"USER.md"}) || !slices.Equal(res.Kept, []string{"SOUL.md"}) {
		t.Errorf("checkout = %+v", res)
	}
	if !slices.Equal(points, []string{gitstore.PointCheckout}) {
		t.Errorf("hook points = %q", points)
	}
	if fi, err := os.Stat(filepath.Join(dir, "USER.md")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("USER.md mode = %v, %v", fi.Mode(), err)
	}
	if got := testkit.ReadFile(t, filepath.Dir(outside), "secret.md"); got != "secret\n" {
		t.Errorf("the link was followed: %q", got)
	}
}
