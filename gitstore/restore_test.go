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

// restore is Restore with the default resolution (the later lines kept).
func restore(t *testing.T, s *gitstore.Store, rev string, keep func(string) bool) gitstore.Restored {
	t.Helper()
	r, err := s.Restore(rev, keep, gitstore.RestoreOptions{})
	if err != nil {
		t.Fatalf("Restore(%s): %v", rev, err)
	}
	return r
}

func fileState(t *testing.T, s *gitstore.Store, dir string) map[string]string {
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

// The case: undoing a Dream that changed USER.md changes USER.md
// alone, and there only the Dream's own line; a hand-added MEMORY.md line
// and a later Dream's line stay.
func TestRestoreUndoesOnlyItsChange(t *testing.T) {
	s, dir := openStore(t)
	noise := workspaceNoise(t, dir)
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	testkit.WriteFile(t, dir, "USER.md", "# User\n- Ana\n")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "# Memory\n- standup at 10\n")
	mustCommit(t, s, "manual: base")
	testkit.WriteFile(t, dir, "USER.md", "# User\n- Ana\n- Ana prefers tea\n")
	a := mustCommit(t, s, "dream: A")
	testkit.WriteFile(t, dir, "USER.md", "# User\n- Ana\n- Ana prefers tea\n- Ana lives in Lisbon\n")
	mustCommit(t, s, "dream: B")
	// A line added by hand, not committed yet.
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "# Memory\n- standup at 10\n- release on Fridays\n")

	r := restore(t, s, a.Short, nil)

	want := map[string]string{
		"SOUL.md":          "soul\n",
		"USER.md":          "# User\n- Ana\n- Ana lives in Lisbon\n",
		"memory/MEMORY.md": "# Memory\n- standup at 10\n- release on Fridays\n",
	}
	if got := fileState(t, s, dir); !mapsEqual(got, want) {
		t.Errorf("files after the restore = %q\nwant %q", got, want)
	}
	assertNoise(t, dir, noise)
	log, err := s.Log(3, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := subjects(log); !slices.Equal(got, []string{"revert: undo " + a.Short, gitstore.ManualSubject, "dream: B"}) {
		t.Fatalf("log = %q", got)
	}
	if !sameCommit(log[0], r.Commit) {
		t.Errorf("Restore returned %+v, log has %+v", r.Commit, log[0])
	}
	_, d, err := s.Show(r.Commit.SHA, nil)
	if err != nil || !slices.Equal(diffPaths(d), []string{"USER.md"}) {
		t.Errorf("the revert commit changed %q (%v); want USER.md alone", diffPaths(d), err)
	}
	if len(r.Plan.Files) != 1 || !slices.Equal(r.Plan.Files[0].Removed, []string{"- Ana prefers tea"}) || len(r.Plan.Files[0].Restored) != 0 {
		t.Errorf("plan = %+v", r.Plan.Files)
	}
	for _, want := range []string{
		"Undid " + a.Short + " (dream: A) line by line",
		"- USER.md: 1 line taken out, 0 lines put back\n",
		"\n\nReverts: " + a.SHA + "\nReverted: USER.md -1 +0",
	} {
		if !strings.Contains(r.Commit.Body, want) {
			t.Errorf("revert body lacks %q:\n%s", want, r.Commit.Body)
		}
	}
	if status, err := s.Status(nil); err != nil || !status.Empty() {
		t.Errorf("Status after restore = %+v, %v; want clean", status, err)
	}
	checkGit(t, s, dir)

	t.Run("again: nothing to do", func(t *testing.T) {
		if _, err := s.Restore(a.SHA, nil, gitstore.RestoreOptions{}); !errors.Is(err, gitstore.ErrNothingToCommit) {
			t.Fatalf("second Restore = %v, want ErrNothingToCommit", err)
		}
	})
	t.Run("undo the restore", func(t *testing.T) {
		restore(t, s, r.Commit.Short, nil)
		want["USER.md"] = "# User\n- Ana\n- Ana prefers tea\n- Ana lives in Lisbon\n"
		if got := fileState(t, s, dir); !mapsEqual(got, want) {
			t.Errorf("files = %q, want %q", got, want)
		}
		checkGit(t, s, dir)
	})
	t.Run("a hand edit commit", func(t *testing.T) {
		manual := log[1]
		restore(t, s, manual.Short, nil)
		if got := testkit.ReadFile(t, dir, "memory/MEMORY.md"); got != "# Memory\n- standup at 10\n" {
			t.Errorf("MEMORY.md after undoing the hand edit = %q", got)
		}
	})
}

func TestRestoreErrors(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	before := fileState(t, s, dir)
	all, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]error{
		all[len(all)-1].Short: gitstore.ErrRootCommit,
		unknownPrefix(t, s):   gitstore.ErrUnknownRevision,
		"xyz":                 gitstore.ErrInvalidRevision,
	} {
		if _, err := s.Restore(rev, nil, gitstore.RestoreOptions{}); !errors.Is(err, want) {
			t.Errorf("Restore(%s) = %v, want %v", rev, err, want)
		}
		if _, err := s.PlanRestore(rev, nil); !errors.Is(err, want) {
			t.Errorf("PlanRestore(%s) = %v, want %v", rev, err, want)
		}
	}
	if got := fileState(t, s, dir); !mapsEqual(got, before) {
		t.Errorf("a failed restore changed files: %q", got)
	}
}

// Two Dreams append to the same file, one after the other: undoing the
// first keeps the second's line, with no conflict (git's three-way merge
// would call it one).
func TestRestoreNeighbouringAppends(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- a\n")
	mustCommit(t, s, "manual: base")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- a\n- b\n")
	b := mustCommit(t, s, "dream: b")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- a\n- b\n- c\n")
	mustCommit(t, s, "dream: c")
	plan, err := s.PlanRestore(b.SHA, nil)
	if err != nil || plan.Conflicts() != 0 || len(plan.Later) != 0 {
		t.Fatalf("plan = %+v, %v; want no conflict", plan, err)
	}
	restore(t, s, b.SHA, nil)
	if got := testkit.ReadFile(t, dir, "memory/MEMORY.md"); got != "- a\n- c\n" {
		t.Errorf("MEMORY.md = %q, want the later append kept", got)
	}
	checkGit(t, s, dir)
}

// A later change to the line the commit changed is a conflict: the plan
// shows it (the lines now, as the commit left them, as before it) and the
// later commit; the person keeps the later line or undoes it too.
func TestRestoreConflict(t *testing.T) {
	setup := func(t *testing.T) (*gitstore.Store, string, gitstore.Commit, gitstore.Commit) {
		s, dir := openStore(t)
		testkit.WriteFile(t, dir, "USER.md", "- office Harbour\n- tea\n")
		mustCommit(t, s, "manual: base")
		testkit.WriteFile(t, dir, "USER.md", "- office Canal Road\n- tea\n- cats\n")
		a := mustCommit(t, s, "dream: A")
		testkit.WriteFile(t, dir, "USER.md", "- office Dock\n- tea\n- cats\n")
		b := mustCommit(t, s, "dream: B")
		return s, dir, a, b
	}
	s, dir, a, b := setup(t)
	plan, err := s.PlanRestore(a.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Conflicts() != 1 || len(plan.Files) != 1 {
		t.Fatalf("plan = %+v", plan)
	}
	f := plan.Files[0]
	c := f.Conflicts[0]
	if !slices.Equal(c.Now, []string{"- office Dock"}) || !slices.Equal(c.Left, []string{"- office Canal Road"}) || !slices.Equal(c.Before, []string{"- office Harbour"}) {
		t.Errorf("conflict = %+v", c)
	}
	if !slices.Equal(f.Removed, []string{"- cats"}) {
		t.Errorf("removed = %q, want the commit's line no later change touched", f.Removed)
	}
	if !slices.Equal(shas(plan.Later), []string{b.SHA}) {
		t.Errorf("later = %q, want B", subjects(plan.Later))
	}
	r := restore(t, s, a.SHA, nil)
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "- office Dock\n- tea\n" {
		t.Errorf("USER.md kept later = %q", got)
	}
	if !strings.Contains(r.Commit.Body, "\nKept-Later: USER.md 1") || !strings.Contains(r.Commit.Body, "(1 place): kept the later lines") {
		t.Errorf("body:\n%s", r.Commit.Body)
	}
	checkGit(t, s, dir)

	s, dir, a, _ = setup(t)
	r, err = s.Restore(a.SHA, nil, gitstore.RestoreOptions{Resolution: gitstore.UndoAll})
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, "USER.md"); got != "- office Harbour\n- tea\n" {
		t.Errorf("USER.md undone whole = %q", got)
	}
	if !strings.Contains(r.Commit.Body, "\nUndid-Later: USER.md 1") || !strings.Contains(r.Commit.Body, "Reverted: USER.md -2 +1") {
		t.Errorf("body:\n%s", r.Commit.Body)
	}
	checkGit(t, s, dir)
}

// Every later line of the commit's was changed since, and the person keeps
// them: nothing to undo, no commit.
func TestRestoreKeepingEveryLaterLineIsNothing(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "- a\n")
	mustCommit(t, s, "manual: base")
	testkit.WriteFile(t, dir, "USER.md", "- b\n")
	a := mustCommit(t, s, "dream: A")
	testkit.WriteFile(t, dir, "USER.md", "- c\n")
	mustCommit(t, s, "dream: B")
	if _, err := s.Restore(a.SHA, nil, gitstore.RestoreOptions{}); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Fatalf("Restore keeping the later line = %v, want ErrNothingToCommit", err)
	}
	if log, _ := s.Log(1, "", nil); log[0].Subject != "dream: B" {
		t.Errorf("a restore that did nothing committed: %q", subjects(log))
	}
}

func TestRestoreNotInHistory(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	mustCommit(t, s, "dream: soul")
	a, _, _ := craftAmbiguity(t, dir) // commits that exist but are on no branch
	testkit.WriteFile(t, dir, "USER.md", "by hand\n")
	_, err := s.Restore(a.String(), nil, gitstore.RestoreOptions{})
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

// A file the commit made goes again when nothing else was written into
// it; one that grew since keeps the later lines.
func TestRestoreOfAFileTheCommitMade(t *testing.T) {
	_, dir := openStore(t)
	s, err := gitstore.Open(dir, gitstore.Options{
		Tracked: append(slices.Clone(gitstore.TestTracked), "memory/PROJECTS.md", "memory/COLD.md"),
		Now:     newClock().now,
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "memory/PROJECTS.md", "- dreamgate\n")
	testkit.WriteFile(t, dir, "memory/COLD.md", "- old plan\n")
	x := mustCommit(t, s, "dream: projects")
	testkit.WriteFile(t, dir, "memory/COLD.md", "- old plan\n- written by hand\n")
	testkit.WriteFile(t, dir, "notes.txt", "keep me\n")

	r := restore(t, s, x.Short, nil)
	if _, err := os.Stat(filepath.Join(dir, "memory", "PROJECTS.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("memory/PROJECTS.md still exists after undoing the commit that made it (%v)", err)
	}
	if got := testkit.ReadFile(t, dir, "memory/COLD.md"); got != "- written by hand\n" {
		t.Errorf("memory/COLD.md = %q, want the hand-written line kept", got)
	}
	var deleted []string
	for _, f := range r.Plan.Files {
		if f.Deleted {
			deleted = append(deleted, f.Path)
		}
	}
	if !slices.Equal(deleted, []string{"memory/PROJECTS.md"}) {
		t.Errorf("deleted = %q", deleted)
	}
	if got := testkit.ReadFile(t, dir, "notes.txt"); got != "keep me\n" {
		t.Errorf("notes.txt = %q", got)
	}
	checkGit(t, s, dir)
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

// A restore is committed before its files are written: one that cannot
// write a file (a plain file sits where its folder should be) stands as a
// commit, says so, and Checkout writes the rest once it can.
func TestRestoreCommitsBeforeItsFiles(t *testing.T) {
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
	testkit.WriteFile(t, dir, "a", "blocker\n")

	r, err := s.Restore(y.Short, nil, gitstore.RestoreOptions{})
	if err == nil || r.Commit.SHA == "" {
		t.Fatalf("Restore = %+v, %v; want its commit and an error for the file it could not write", r.Commit, err)
	}
	if got := testkit.ReadFile(t, dir, "a"); got != "blocker\n" {
		t.Errorf("the blocking file was touched: %q", got)
	}
	if log, _ := s.Log(1, "", nil); log[0].SHA != r.Commit.SHA {
		t.Errorf("the restore's commit is not HEAD: %q", subjects(log))
	}
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkout(y.SHA, r.Commit.SHA, nil); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, "SOUL.md") + testkit.ReadFile(t, dir, "a/b.md"); got != "v1\nx\n" {
		t.Errorf("files after the checkout: %q", got)
	}
	if st, err := s.Status(nil); err != nil || !st.Empty() {
		t.Errorf("Status after the checkout = %+v, %v; want clean", st, err)
	}
	checkGit(t, s, dir)
}

// A restore far back in a long history names at most 10 later commits,
// the ones that changed a file where it conflicts.
func TestRestorePlanNamesBoundedLaterCommits(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "mem 0\n")
	mustCommit(t, s, "manual: base")
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "mem first\n")
	first := mustCommit(t, s, "dream: 0")
	for i := 1; i <= 60; i++ {
		testkit.WriteFile(t, dir, "memory/MEMORY.md", fmt.Sprintf("mem %d\n", i))
		mustCommit(t, s, fmt.Sprintf("dream: %d", i))
	}
	plan, err := s.PlanRestore(first.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Later) != 10 || plan.Later[0].Subject != "dream: 60" {
		t.Fatalf("later = %q", subjects(plan.Later))
	}
}

// A committed symbolic link (planted by hand in a memory folder and
// committed as git would, then replaced by a file or removed) never comes
// back with a restore, whatever the resolution: memory files are read
// through no link, and a restore must not plant one again — in the root's
// files, or a scope's on its own line of history.
func TestRestoreNeverBringsALinkBack(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("- The vault code is 4711.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stores := []struct {
		name string
		open func(*testing.T) (*gitstore.Store, string)
		file string
	}{
		{"the root's USER.md", func(t *testing.T) (*gitstore.Store, string) { return openStore(t) }, "USER.md"},
		{"a scope's USER.md", linesStore, teamUser},
	}
	undone := map[string]func(t *testing.T, link string){
		"replaced by a file": func(t *testing.T, link string) {
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, filepath.Dir(link), filepath.Base(link), "# User\n- Ana\n")
		},
		"removed": func(t *testing.T, link string) {
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, st := range stores {
		for what, change := range undone {
			for _, res := range []gitstore.Resolution{gitstore.KeepLater, gitstore.UndoAll} {
				t.Run(fmt.Sprintf("%s %s, resolution %d", st.name, what, res), func(t *testing.T) {
					s, dir := st.open(t)
					link := filepath.Join(dir, filepath.FromSlash(st.file))
					testkit.WriteFile(t, dir, st.file, "# User\n")
					mustCommit(t, s, "manual: base")
					if err := os.Remove(link); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(outside, link); err != nil {
						t.Skipf("no symbolic links here: %v", err)
					}
					mustCommit(t, s, gitstore.ManualSubject)
					change(t, link)
					c := mustCommit(t, s, gitstore.ManualSubject)

					_, err := s.Restore(c.Short, nil, gitstore.RestoreOptions{Resolution: res})
					if fi, lerr := os.Lstat(link); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
						t.Errorf("the restore (%v) brought the link back", err)
					}
					if got, _ := os.ReadFile(link); strings.Contains(string(got), "4711") {
						t.Errorf("%s reads the link's target after the restore (%v): %q", st.file, err, got)
					}
				})
			}
		}
	}
}

// Undoing a commit that replaced a symbolic link brings no link back and
// says so: it answered "the change of … is undone already", which was not
// true. Where the commit changed other files too, those are undone, and
// the plan and the restore commit name the linked file as left as it is.
func TestUndoingALinksReplacementSaysALinkIsNeverBroughtBack(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("- The vault code is 4711.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, dir := linesStore(t)
	link := filepath.Join(dir, filepath.FromSlash(teamUser))
	relink := func() {
		t.Helper()
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WriteFile(t, dir, teamUser, "# User\n")
	testkit.WriteFile(t, dir, teamMemory, "# Memory\n")
	mustCommit(t, s, "manual: base")
	relink()
	mustCommit(t, s, gitstore.ManualSubject)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, teamUser, "# User\n- Ana\n")
	c := mustCommit(t, s, gitstore.ManualSubject)

	_, err := s.Restore(c.Short, nil, gitstore.RestoreOptions{})
	var le *gitstore.LinkNotRestoredError
	if err == nil || strings.Contains(err.Error(), "undone already") || !strings.Contains(err.Error(), "symbolic link") ||
		!errors.Is(err, gitstore.ErrLinkNotRestored) || !errors.Is(err, gitstore.ErrNothingToCommit) ||
		!errors.As(err, &le) || !slices.Equal(le.Paths, []string{teamUser}) || le.Commit != c.Short {
		t.Errorf("undoing the link's replacement: %v", err)
	}
	if got := testkit.ReadFile(t, dir, teamUser); got != "# User\n- Ana\n" {
		t.Errorf("USER.md after the refused undo: %q", got)
	}

	// The link's replacement beside a line of MEMORY.md: the line goes,
	// USER.md stays as it is, and both the plan and the commit say so.
	relink()
	mustCommit(t, s, gitstore.ManualSubject)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, teamUser, "# User\n- Bob\n")
	testkit.WriteFile(t, dir, teamMemory, "# Memory\n- Ships on Fridays.\n")
	c = mustCommit(t, s, gitstore.ManualSubject)
	plan, err := s.PlanRestore(c.Short, nil)
	if err != nil || !slices.Equal(plan.Links, []string{teamUser}) || len(plan.Files) != 1 || plan.Files[0].Path != teamMemory {
		t.Fatalf("the plan: %+v, %v", plan, err)
	}
	r, err := s.Restore(c.Short, nil, gitstore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Commit.Body, "- "+teamUser+": left as it is: it was a symbolic link before, which a restore never brings back") {
		t.Errorf("the restore commit's message:\n%s", r.Commit.Body)
	}
	if got := testkit.ReadFile(t, dir, teamUser); got != "# User\n- Bob\n" {
		t.Errorf("USER.md after the undo: %q", got)
	}
	if got := testkit.ReadFile(t, dir, teamMemory); got != "# Memory\n" {
		t.Errorf("MEMORY.md after the undo: %q", got)
	}
}
