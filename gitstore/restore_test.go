package gitstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestRestore(t *testing.T) {
	s, dir := openStore(t)
	noise := workspaceNoise(t, dir) // untracked notes.txt, ignored history.jsonl, ...

	state := func() map[string]string {
		m := map[string]string{}
		for _, p := range s.Tracked() {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				m[p] = "<missing>"
				continue
			}
			m[p] = string(b)
		}
		return m
	}
	write := func(files map[string]string) {
		for p, c := range files {
			testkit.WriteFile(t, dir, p, c)
		}
	}

	write(map[string]string{"SOUL.md": "soul 0\n", "USER.md": "user 0\n", "memory/MEMORY.md": "mem 0\n"})
	base := mustCommit(t, s, "manual: base")
	before := state()

	write(map[string]string{"memory/MEMORY.md": "mem 0\nmem A\n"})
	a := mustCommit(t, s, "dream: A")
	write(map[string]string{"USER.md": "user B\n"})
	mustCommit(t, s, "dream: B")
	write(map[string]string{"memory/MEMORY.md": "mem 0\nmem A\nmem C\n"})
	c := mustCommit(t, s, "dream: C")
	write(map[string]string{"USER.md": "user 0\n"}) // D puts USER.md back as it was before A
	mustCommit(t, s, "dream: D")
	// An edit by hand, not committed yet: it must survive in history.
	write(map[string]string{"SOUL.md": "soul by hand\n"})

	restore, undone, err := s.Restore(a.Short, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The tracked files are exactly as before A.
	if got := state(); !mapsEqual(got, before) {
		t.Errorf("files after restore = %q, want %q", got, before)
	}
	assertNoise(t, dir, noise)

	log, err := s.Log(3, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"revert: undo " + a.Short, gitstore.ManualSubject, "dream: D"}; !slices.Equal(subjects(log), want) {
		t.Fatalf("log = %q, want %q", subjects(log), want)
	}
	manual := log[1]
	if !sameCommit(log[0], restore) {
		t.Errorf("Restore returned %+v, log has %+v", restore, log[0])
	}
	// Undone: every later commit that changed a file the restore changed
	// (SOUL.md by the hand edit, MEMORY.md by C); B and D touched only
	// USER.md, which the restore leaves alone (D had already put it back).
	if got, want := shas(undone), []string{manual.SHA, c.SHA}; !slices.Equal(got, want) {
		t.Errorf("undone = %q, want %q (manual, C)", subjects(undone), []string{manual.Subject, c.Subject})
	}

	// The hand edit is kept in the manual commit.
	_, md, err := s.Show(manual.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.Unified, "+soul by hand") {
		t.Errorf("the manual commit lost the hand edit:\n%s", md.Unified)
	}
	// The revert commit names what it did.
	for _, want := range []string{
		"state before " + a.Short + " (dream: A)",
		"- SOUL.md: restored", "- memory/MEMORY.md: restored",
		"- " + manual.Short + " " + gitstore.ManualSubject,
		"- " + c.Short + " dream: C",
		"memory/MEMORY.md: +0 -2",
	} {
		if !strings.Contains(restore.Body, want) {
			t.Errorf("revert body lacks %q:\n%s", want, restore.Body)
		}
	}
	if status, err := s.Status(nil); err != nil || !status.Empty() {
		t.Errorf("Status after restore = %+v, %v; want clean", status, err)
	}
	checkGit(t, s, dir)
	if hasGit() {
		// The tracked files of the new commit are those of A's parent.
		if out, err := tryGit(t, dir, "diff", "--exit-code", base.SHA, "HEAD", "--", "SOUL.md", "USER.md", "memory/MEMORY.md"); err != nil {
			t.Errorf("HEAD differs from the state before A: %v\n%s", err, out)
		}
	}

	t.Run("again: nothing to do", func(t *testing.T) {
		_, _, err := s.Restore(a.SHA, nil)
		if !errors.Is(err, gitstore.ErrNothingToCommit) {
			t.Fatalf("second Restore = %v, want ErrNothingToCommit", err)
		}
		checkGit(t, s, dir)
	})

	t.Run("undo the restore", func(t *testing.T) {
		// A restore is a commit like any other: restoring the state before
		// it brings back D's state plus the hand edit.
		_, _, err := s.Restore(restore.Short, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"SOUL.md": "soul by hand\n", "USER.md": "user 0\n", "memory/MEMORY.md": "mem 0\nmem A\nmem C\n"}
		if got := state(); !mapsEqual(got, want) {
			t.Errorf("files = %q, want %q", got, want)
		}
		assertNoise(t, dir, noise)
		checkGit(t, s, dir)
	})

	t.Run("root commit", func(t *testing.T) {
		all, err := s.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		root := all[len(all)-1]
		if _, _, err := s.Restore(root.Short, nil); !errors.Is(err, gitstore.ErrRootCommit) {
			t.Fatalf("Restore(root) = %v, want ErrRootCommit", err)
		}
	})

	t.Run("unknown and invalid", func(t *testing.T) {
		head := state()
		if _, _, err := s.Restore(unknownPrefix(t, s), nil); !errors.Is(err, gitstore.ErrUnknownRevision) {
			t.Errorf("Restore(unknown) = %v, want ErrUnknownRevision", err)
		}
		if _, _, err := s.Restore("xyz", nil); !errors.Is(err, gitstore.ErrInvalidRevision) {
			t.Errorf("Restore(xyz) = %v, want ErrInvalidRevision", err)
		}
		if got := state(); !mapsEqual(got, head) {
			t.Errorf("a failed restore changed files: %q", got)
		}
	})
}

func TestRestoreNotInHistory(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	a, _, _ := craftAmbiguity(t, dir) // commits that exist but are on no branch
	testkit.WriteFile(t, dir, "USER.md", "by hand\n")
	_, _, err := s.Restore(a.String(), nil)
	if !errors.Is(err, gitstore.ErrNotInHistory) {
		t.Fatalf("Restore(off-history commit) = %v, want ErrNotInHistory", err)
	}
	// Refused before anything was written or committed.
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "by hand\n" {
		t.Errorf("USER.md = %q", got)
	}
	if log, _ := s.Log(0, "", nil); len(log) != 2 {
		t.Errorf("a refused restore committed: %q", subjects(log))
	}
}

func TestRestoreDeletesFileThatDidNotExist(t *testing.T) {
	_, dir := openStore(t)
	// The workspace starts tracking one more file later on.
	s2, err := gitstore.Open(dir, gitstore.Options{
		Tracked: append(slices.Clone(gitstore.TestTracked), "memory/PROJECTS.md"),
		Now:     newClock().now,
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "memory/PROJECTS.md", "- dreamgate\n")
	x := mustCommit(t, s2, "dream: projects")
	testkit.WriteFile(t, dir, "notes.txt", "keep me\n")

	r, undone, err := s2.Restore(x.Short, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory", "PROJECTS.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("memory/PROJECTS.md still exists after restoring the state before it was added (%v)", err)
	}
	if len(undone) != 0 {
		t.Errorf("undone = %q, want none", subjects(undone))
	}
	if !strings.Contains(r.Body, "- memory/PROJECTS.md: deleted (it did not exist before "+x.Short+")") {
		t.Errorf("body:\n%s", r.Body)
	}
	if got := testkit.ReadFile(t, dir, "notes.txt"); got != "keep me\n" {
		t.Errorf("notes.txt = %q", got)
	}
	checkGit(t, s2, dir)
}

func shas(cs []gitstore.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.SHA
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestRestoreFailureLeavesFilesAsCommitted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: []string{"SOUL.md", "a/b.md"}, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "SOUL.md", "v1\n")
	testkit.WriteFile(t, dir, "a/b.md", "x\n")
	mustCommit(t, s, "dream: x")
	testkit.WriteFile(t, dir, "SOUL.md", "v2\n")
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	y := mustCommit(t, s, "dream: y")
	// A plain file now sits where the restore needs the directory a/: the
	// restore writes SOUL.md first, then fails on a/b.md.
	testkit.WriteFile(t, dir, "a", "blocker\n")

	if _, _, err := s.Restore(y.Short, nil); err == nil {
		t.Fatal("Restore succeeded although a/b.md cannot be written")
	}
	if got := testkit.ReadFile(t, dir, "SOUL.md"); got != "v2\n" {
		t.Errorf("SOUL.md = %q after a failed restore, want it back as committed (v2)", got)
	}
	if got := testkit.ReadFile(t, dir, "a"); got != "blocker\n" {
		t.Errorf("the blocking file was touched: %q", got)
	}
	if st, err := s.Status(nil); err != nil || !st.Empty() {
		t.Errorf("Status after a failed restore = %+v, %v; want clean", st, err)
	}
	if log, _ := s.Log(1, "", nil); len(log) != 1 || log[0].SHA != y.SHA {
		t.Errorf("a failed restore committed: %q", subjects(log))
	}
	checkGit(t, s, dir)
}

// A restore far back names at most 50 of the later commits it undoes in
// its message, and how many more: the message of HEAD is read by every
// later /dream-log.
func TestRestoreCommitNamesBoundedLaterCommits(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "mem 0\n")
	first := mustCommit(t, s, "dream: 0")
	for i := 1; i <= 60; i++ {
		testkit.WriteFile(t, dir, "memory/MEMORY.md", fmt.Sprintf("mem %d\n", i))
		mustCommit(t, s, fmt.Sprintf("dream: %d", i))
	}
	restore, undone, err := s.Restore(first.Short, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(undone) != 60 {
		t.Fatalf("undone %d later commits, want 60", len(undone))
	}
	c, _, err := s.Show(restore.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(c.Body, " dream: "); n != 50 || !strings.Contains(c.Body, "- … and 10 more\n") {
		t.Fatalf("restore message lists %d lines:\n%s", n, c.Body)
	}
}

// LatestAfter finds a restore made after a commit (the latest Dream commit
// it undid), however many commits back that one is, and none made before.
func TestLatestAfterFindsTheRestoreThatUndidACommit(t *testing.T) {
	s, dir := openStore(t)
	write := func(i int) { testkit.WriteFile(t, dir, "memory/MEMORY.md", fmt.Sprintf("mem %d\n", i)) }
	write(0)
	d0 := mustCommit(t, s, "dream: 0")
	if _, ok, err := s.LatestAfter(d0.SHA, gitstore.RevertPrefix, nil); err != nil || ok {
		t.Fatalf("no restore yet: found %v, %v", ok, err)
	}
	write(1)
	d1 := mustCommit(t, s, "dream: 1")
	revert, _, err := s.Restore(d1.Short, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.LatestAfter(d1.SHA, gitstore.RevertPrefix, nil); err != nil || !ok || r.SHA != revert.SHA {
		t.Fatalf("restore after d1: %+v %v %v, want %s", r, ok, err, revert.Short)
	}
	write(2)
	d2 := mustCommit(t, s, "dream: 2")
	if r, ok, err := s.LatestAfter(d2.SHA, gitstore.RevertPrefix, nil); err != nil || ok {
		t.Fatalf("restore only before d2: found %+v %v %v", r, ok, err)
	}
	for i := range 105 {
		write(100 + i)
		mustCommit(t, s, gitstore.ManualSubject)
	}
	revert2, _, err := s.Restore(d2.Short, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.LatestAfter(d2.SHA, gitstore.RevertPrefix, nil); err != nil || !ok || r.SHA != revert2.SHA {
		t.Fatalf("d2 far back: %+v %v %v, want %s", r, ok, err, revert2.Short)
	}
}
